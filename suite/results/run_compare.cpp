// Two run files compared bit for bit, every metric dataset and attribute
// (what --reproduce reports): times and provenance aside.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <set>

#include "dpstudy/error.hpp"
#include "dpstudy/hdf5.hpp"
#include "dpstudy/results.hpp"

namespace dpstudy {

namespace {

// Measurements, not metrics: they change from run to run of one config (times, memory).
bool is_measurement(const std::string& name) {
  static const std::set<std::string> kMeasurements = {
      "time_s",      "comm_s",      "time_to_goal_s", "wall_time_s",  "samples_per_s", "compute_time_s",
      "comm_time_s", "eval_time_s", "started_utc",    "finished_utc", "peak_rss_mib",  "peak_gpu_mib"};
  return kMeasurements.count(name) > 0;
}

// Numbers compare by their bits, so "equal" means bit for bit; but any NaN
// equals any NaN: its sign and payload tell which operand of a commutative
// addition was a NaN, which differs between process layouts (results are
// written with one NaN since 2026-11-30: hdf5_detail.hpp, one_nan).
template <typename T>
bool same_value(const T& a, const T& b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) && std::isnan(b)) return true;
  }
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), same_value<T>);
}

std::string exact(double v) { return to_text(ConfigValue(v)); }

// `cols`: the row length of a matrix stored row-major (1 for a column), so that
// the first difference is named by row and column (step and worker); `steps`: the
// group's step column, if it has one, so that the row's step is named too.
template <typename T, typename Text>
std::string first_difference(const std::vector<T>& a, const std::vector<T>& b, Text text, std::int64_t cols = 1,
                             const std::vector<std::int64_t>* steps = nullptr) {
  if (a.size() != b.size()) {
    return std::to_string(a.size()) + " values in the reference, " + std::to_string(b.size()) + " reproduced";
  }
  std::size_t n = 0, first = 0;
  for (std::size_t i = a.size(); i-- > 0;) {
    if (!same_value(a[i], b[i])) ++n, first = i;
  }
  const std::size_t row = first / std::size_t(cols);
  std::string at = "row " + std::to_string(row);
  if (steps && row < steps->size()) at += " (step " + std::to_string((*steps)[row]) + ")";
  if (cols > 1) at += ", column " + std::to_string(first % std::size_t(cols));
  return std::to_string(n) + " of " + std::to_string(a.size()) + " values differ, the first at " + at + ": " +
         text(a[first]) + " in the reference, " + text(b[first]) + " reproduced";
}

// One attribute of two groups: "" when the same, else what differs.
std::string attr_difference(const h5::Group& a, const h5::Group& b, const std::string& name) {
  if (!a.has_attr(name)) return "only in the reproduced file";
  if (!b.has_attr(name)) return "only in the reference";
  const char kind = a.attr_kind(name);
  if (kind != b.attr_kind(name)) return "stored as another type";
  if (kind == 's') {
    const std::string x = a.get_string(name), y = b.get_string(name);
    return x == y ? "" : "'" + x + "' in the reference, '" + y + "' reproduced";
  }
  if (kind == 'i') {
    const std::int64_t x = a.get_int(name), y = b.get_int(name);
    return x == y ? "" : std::to_string(x) + " in the reference, " + std::to_string(y) + " reproduced";
  }
  const double x = a.get_double(name), y = b.get_double(name);
  return same_value(x, y) ? "" : exact(x) + " in the reference, " + exact(y) + " reproduced";
}

std::vector<std::string> union_of(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  return a;
}

}  // namespace

RunComparison compare_run_files(const std::string& reference, const std::string& other) {
  RunComparison out;
  const h5::File fa = h5::File::open_read(reference), fb = h5::File::open_read(other);
  const h5::Group ra = fa.root(), rb = fb.root();
  const std::string status = attr_difference(ra, rb, "status");
  ++out.compared;
  if (!status.empty()) out.differences.push_back("status: " + status);
  static const std::vector<std::string> kGroups = {"train",    "eval",    "syncs", "assignment",
                                                    "sparsity", "summary", "config"};
  for (const std::string& group : ra.members()) {  // a group of another version's: not compared, but named
    if (group != "provenance" && std::find(kGroups.begin(), kGroups.end(), group) == kGroups.end()) {
      out.only_in_reference.push_back(group);
    }
  }
  for (const std::string& group : kGroups) {
    const bool config = group == "config";
    std::vector<std::string>& diffs = config ? out.config_differences : out.differences;
    if (!ra.has(group)) {
      out.not_in_reference.push_back(group);
      continue;
    }
    if (!rb.has(group)) {
      diffs.push_back(group + ": missing in the reproduced file");
      continue;
    }
    const h5::Group ga = ra.open_group(group), gb = rb.open_group(group);
    const bool stepped = ga.has("step") && ga.dataset_kind("step") == 'i';
    const std::vector<std::int64_t> steps = stepped ? ga.read_ints("step") : std::vector<std::int64_t>();
    const std::vector<std::int64_t>* row_steps = stepped ? &steps : nullptr;
    for (const std::string& name : union_of(ga.attr_names(), gb.attr_names())) {
      if (is_measurement(name) || (config && name == "study_text")) continue;
      if (!ga.has_attr(name) && !config) {
        out.not_in_reference.push_back(group + "@" + name);
        continue;
      }
      ++out.compared;
      const std::string d = attr_difference(ga, gb, name);
      if (!d.empty()) diffs.push_back(group + "@" + name + ": " + d);
    }
    for (const std::string& name : union_of(ga.members(), gb.members())) {
      if (is_measurement(name)) continue;
      const std::string where = group + "/" + name;
      if (!ga.has(name)) {
        out.not_in_reference.push_back(where);
        continue;
      }
      ++out.compared;
      if (!gb.has(name)) {
        diffs.push_back(where + ": only in the reference");
        continue;
      }
      const char kind = ga.dataset_kind(name);
      if (kind != gb.dataset_kind(name)) {
        diffs.push_back(where + ": stored as another type");
      } else if (kind == 'f') {
        const auto a = ga.read_doubles(name), b = gb.read_doubles(name);
        const auto shape = ga.dataset_shape(name);
        if (!same_bits(a, b)) {
          diffs.push_back(where + ": " + first_difference(a, b, exact, shape.size() == 2 ? shape[1] : 1, row_steps));
        }
      } else if (kind == 'i') {
        const auto a = ga.read_ints(name), b = gb.read_ints(name);
        if (!same_bits(a, b)) {
          diffs.push_back(where + ": " + first_difference(a, b, [](std::int64_t v) { return std::to_string(v); }, 1,
                                                          row_steps));
        }
      } else if (ga.read_strings(name) != gb.read_strings(name)) {
        diffs.push_back(where + ": the texts differ");
      }
    }
  }
  return out;
}

}  // namespace dpstudy
