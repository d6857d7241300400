// The job's own options, apart from the run and model keys: their --help
// sections, read into JobOptions, and their checks (ConfigError naming the
// option, its value and what was expected).
#pragma once

#include <boost/program_options/options_description.hpp>

#include "job.hpp"

namespace dpstudy {

struct JobDescriptions {
  boost::program_options::options_description general{"General"}, study{"Study (docs/studies.md)"},
      search{"Metaparameter search (docs/studies.md)"},
      speed{"Throughput mode (docs/performance.md); Google Benchmark's --benchmark_* flags apply"};
};
void describe_job_options(JobDescriptions& d, JobOptions& g);
void check_job_options(const JobOptions& g);

}  // namespace dpstudy
