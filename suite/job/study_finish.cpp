// The end of a study's job: the index, the study's table, the checks asked for.
#include <cstdio>

#include "dpstudy/hdf5.hpp"
#include "dpstudy/stop.hpp"
#include "study_job.hpp"

namespace fs = std::filesystem;

namespace dpstudy {

std::size_t StudyJob::reindex() {
  std::vector<std::string> skipped;
  std::size_t indexed = index_->rebuild(&skipped);
  // Another job on this study may have written a run file while this one was
  // indexing, and its own index before this one's: index until none is missing.
  for (int again = 0; again < 3 && run_file_paths(job_.request.study_dir).size() > indexed + skipped.size(); ++again) {
    skipped.clear();
    indexed = index_->rebuild(&skipped);
  }
  for (const auto& sk : skipped) out_.line("# skipped corrupt run file in the index: " + sk);
  return indexed;
}

StudyJob::RunTable StudyJob::print_run_table(bool stopped) const {
  std::error_code ec;
  RunTable t;
  const std::vector<std::string>& swept = job_.request.swept;
  std::printf("# %-16s  %-10s  %9s  %s\n", "run id", "status", "test acc", "axes");
  for (const auto& p : plan_) {
    const std::string file = (runs_dir_ / (p.id + ".h5")).string();
    if (!fs::exists(file, ec)) {
      ++t.elsewhere;
      std::printf("  %-16s  %-10s  %9s  %s\n", p.id.c_str(), stopped ? "not done" : "elsewhere", "-",
                  axes_text(p.values, swept).c_str());
      if (options_.expect_given) ++t.failed_checks;  // not checked here
      continue;
    }
    const h5::File f = h5::File::open_read(file);
    if (std::string differ = other_data(p, file, f); !differ.empty()) t.on_other_files.push_back(std::move(differ));
    const h5::Group summary = f.root().open_group("summary");
    const double acc = summary.get_double("final_test_accuracy");
    const std::string status = summary.get_string("status");
    std::printf("  %-16s  %-10s  %8.2f%%  %s\n", p.id.c_str(), status.c_str(), 100 * acc,
                axes_text(p.values, swept).c_str());
    if (options_.expect_given && !(status == "completed" && acc >= options_.expect_accuracy)) ++t.failed_checks;
  }
  return t;
}

// The lead process, once every process is through: the index, the study's
// table, the checks asked for; 5 when the study was stopped.
int StudyJob::finish(bool stopped, bool mixed) {
  const std::size_t indexed = reindex();
  // The study's runs, from their files; a run without one is another job's, still running.
  RunTable table = print_run_table(stopped);
  int failed_checks = table.failed_checks;
  const std::size_t elsewhere = table.elsewhere;
  std::vector<std::string>& on_other_files = table.on_other_files;  // another job's, finished meanwhile
  const std::string& name = job_.request.name;
  const std::string& study_dir = job_.request.study_dir;
  // A signal to some of the job's processes stops their run; the others may
  // finish every run meanwhile, and then there is nothing to resume.
  const bool complete = elsewhere == 0 && options_.reproduce.empty();
  if (stopped && complete) {
    out_.line("# study " + name + " done: " + std::to_string(indexed) + " runs in " + study_dir + "/index.h5; " +
                  stop_cause() + " came, but every run is finished (a run it stopped was finished by other "
                  "processes of the job): nothing to resume",
              0);
    stopped = false;
  } else if (stopped) {
    out_.line("# study " + name + " stopped by " + stop_cause() + ": " + std::to_string(plan_.size() - elsewhere) +
                  " of " + std::to_string(plan_.size()) + " runs done, " + std::to_string(indexed) + " in " +
                  study_dir + "/index.h5; " +
                  (!options_.reproduce.empty() ? std::string("--reproduce starts over each time")
                   : options_.force            ? std::string("without --force, the same command resumes the others")
                                    : std::string("the same command again resumes the others (those stopped from their "
                                                  "checkpoints)")),
              0);
  } else if (elsewhere > 0 && mixed) {
    out_.line("# study " + name + ": this job stopped taking runs (another job's runs were trained on other data "
                  "files, below); " + std::to_string(elsewhere) + " of " + std::to_string(plan_.size()) +
                  " runs not done here; " + std::to_string(indexed) + " runs in " + study_dir + "/index.h5 now",
              0);
  } else if (elsewhere > 0) {
    out_.line("# study " + name + ": this job is done; " + std::to_string(elsewhere) + " of " +
                  std::to_string(plan_.size()) + " runs are still running in another job (their claims in " +
                  runs_dir_.string() + "), which indexes them when it finishes; " + std::to_string(indexed) +
                  " runs in " + study_dir + "/index.h5 now",
              0);
  } else {
    out_.line("# study " + name + " done: " + std::to_string(indexed) + " runs in " + study_dir + "/index.h5", 0);
  }
  // Two jobs on one study, each with its own copy of the data (node-local
  // scratch), both started before either had finished a run: look() could not
  // tell. The study now pools runs of two sets of files, so this job fails.
  std::string mixed_data;
  if (mixed || !on_other_files.empty()) {
    mixed_data = std::to_string(on_other_files.size()) + " run(s) of this study were trained on other data files "
                 "than this job's (another job's copy, finished while this one ran)" +
                 (on_other_files.empty() ? std::string() : ", e.g. " + on_other_files.front()) +
                 (mixed ? ". This job stopped taking runs. " : ". ") +
                 "The study pools runs of two sets of files: give every job the same files (each run file's "
                 "provenance/dataset_checksums lists them); the index's data_digest tells the runs apart "
                 "(dpstudy-analyze --where data_digest=...)";
  }
  // Earlier invocations under this name with other keys or values (a study file
  // edited since, more seeds): their runs stay in the index, and analyses read them.
  const std::size_t listed = plan_.size() - elsewhere;
  if (indexed > listed) {
    const std::string why = "earlier ones under the name " + name +
                            " with other keys or values, or made before configurations that train alike shared "
                            "one run: docs/studies.md#shared-runs";
    out_.line("# the index also holds " + std::to_string(indexed - listed) +
                  " run(s) that this invocation does not list (" + why +
                  "); dpstudy-analyze reads them too: select with --where, or give the study another name",
              0);
  }
  if (training_s_ > 0) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "# results I/O: %.3f s (run files, index, checkpoints) for %.3f s of training: %.2f %%",
                  results_io_s_, training_s_, 100 * results_io_s_ / training_s_);
    out_.line(buf, 0);
  }
  if (!mixed_data.empty()) {
    out_.line("# error: " + mixed_data, 99);  // in the log
    std::fprintf(stderr, "%s: error: %s\n", job_.prog.c_str(), mixed_data.c_str());
    return 2;
  }
  if (stopped) return 5;
  if (!options_.reproduce.empty()) {
    return report_reproduction(options_.reproduce, job_.request.stored, plan_.front().id, runs_dir_.string());
  }
  if (options_.expect_given) {
    std::printf("# check: %d run(s) below %.4f final test accuracy: %s\n", failed_checks, options_.expect_accuracy,
                failed_checks ? "FAILED" : "ok");
    return failed_checks ? 3 : 0;
  }
  return 0;
}

}  // namespace dpstudy
