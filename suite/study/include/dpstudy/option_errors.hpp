// Option values of the wrong type, reported with what was expected. Boost.Program_options
// says "the argument ('1.5') for option '--epochs' is invalid", which leaves the user to
// guess what would be valid.
#pragma once

#include <boost/program_options/parsers.hpp>
#include <boost/program_options/variables_map.hpp>

namespace dpstudy {

// po::store, except that a value its option's type cannot take is thrown as
// ConfigError saying what the type takes ("--epochs: '1.5' must be a whole number");
// every other error is Boost's own.
void store_options(const boost::program_options::parsed_options& parsed,
                   boost::program_options::variables_map& vm);

}  // namespace dpstudy
