#include "dpstudy/option_errors.hpp"

#include <boost/program_options/errors.hpp>
#include <boost/program_options/value_semantic.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <string>

#include "dpstudy/error.hpp"

namespace po = boost::program_options;

namespace dpstudy {
namespace {

template <class T>
bool holds_type(const po::value_semantic* s) {
  return dynamic_cast<const po::typed_value<T>*>(s) != nullptr;
}

// A whole number out of the type's range is told the bound it passed (the option's own
// range, checked later, is usually narrower).
template <class T>
std::string whole_number(const std::string& text) {
  const bool negative = !text.empty() && text[0] == '-';
  const std::size_t digits_from = negative || (!text.empty() && text[0] == '+') ? 1 : 0;
  const bool integral = text.size() > digits_from &&
                        std::all_of(text.begin() + std::ptrdiff_t(digits_from), text.end(),
                                    [](unsigned char c) { return std::isdigit(c) != 0; });
  if (!integral) return "must be a whole number";
  return negative ? "must be a whole number no smaller than " + std::to_string(std::numeric_limits<T>::min())
                  : "must be a whole number no larger than " + std::to_string(std::numeric_limits<T>::max());
}

// What an option of this type takes; "" for types whose errors Boost words well enough.
std::string expected_of(const po::value_semantic* s, const std::string& text) {
  if (holds_type<int>(s)) return whole_number<int>(text);
  if (holds_type<long>(s)) return whole_number<long>(text);
  if (holds_type<long long>(s)) return whole_number<long long>(text);
  if (holds_type<unsigned>(s)) return whole_number<unsigned>(text);
  if (holds_type<unsigned long>(s)) return whole_number<unsigned long>(text);
  if (holds_type<double>(s) || holds_type<float>(s)) return "must be a number, such as 0.05 or 1e-3";
  if (holds_type<bool>(s)) return "must be true or false (or 1 or 0, yes or no, on or off)";
  return "";
}

}  // namespace

void store_options(const po::parsed_options& parsed, po::variables_map& vm) {
  try {
    po::store(parsed, vm);
  } catch (const po::validation_error& e) {
    if (e.kind() != po::validation_error::invalid_option_value &&
        e.kind() != po::validation_error::invalid_bool_value) {
      throw;
    }
    std::string name = e.get_option_name();
    name.erase(0, name.find_first_not_of('-'));
    const po::option_description* option =
        parsed.description ? parsed.description->find_nothrow(name, false) : nullptr;
    // The value that failed: the last one given (an option given twice is refused elsewhere).
    const std::string* value = nullptr;
    for (const po::option& o : parsed.options) {
      if (o.string_key == name && !o.value.empty()) value = &o.value.back();
    }
    const std::string expected = option && value ? expected_of(option->semantic().get(), *value) : "";
    if (expected.empty()) throw;
    throw ConfigError(name, *value, expected);
  }
}

}  // namespace dpstudy
