// A workload's engine from its command line to its results: the request read
// (command_line.cpp) and planned (study_plan.cpp), each run's model built by
// the workload's model.cpp, then the device and the threads set up
// (job_machine.cpp), the data loaded and the runs checked (job_checks.cpp),
// and one run on the console, a study (study_job.cpp) or throughput mode
// (throughput_mode.cpp). The front end before it: front_end.cpp.
#include "dpstudy/workload.hpp"

#include <boost/program_options/errors.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>

#include "dpstudy/cuda_graphs.hpp"
#include "dpstudy/dataset.hpp"
#include "dpstudy/error.hpp"
#include "dpstudy/model.hpp"
#include "dpstudy/progress.hpp"
#include "dpstudy/results.hpp"
#include "dpstudy/runtime_info.hpp"
#include "dpstudy/schedule.hpp"
#include "job_context.hpp"
#include "job_setup.hpp"

namespace dpstudy {

namespace {

void print_result(const RunResult& r) {
  const RunSummary& s = r.summary;
  std::printf("# result: %s\n", to_string(s.status).c_str());
  std::printf("# %-26s %14s  %s\n", "metric", "value", "unit");
  auto row = [](const char* name, double v, const char* unit) {
    if (v == std::floor(v) && std::fabs(v) < 1e15) {
      std::printf("  %-26s %14.0f  %s\n", name, v, unit);  // counts in full
    } else {
      std::printf("  %-26s %14.6g  %s\n", name, v, unit);
    }
  };
  row("final_test_accuracy", s.final_test_accuracy, "fraction");
  row("best_test_accuracy", s.best_test_accuracy, "fraction");
  row("final_test_loss", s.final_test_loss, "nats");
  row("final_val_accuracy", s.final_val_accuracy, "fraction");
  // Local SGD: the last model every worker held (eval_at_sync evaluates at each averaging).
  if (!r.syncs.step.empty()) row("final_synced_test_accuracy", s.final_synced_test_accuracy, "fraction");
  row("steps", double(s.steps), "steps");
  row("steps_per_epoch", double(s.steps_per_epoch), "steps");
  row("wall_time", s.wall_time_s, "s");
  row("samples_per_s", s.samples_per_s, "samples/s");
  row("compute_time", s.compute_time_s, "s");
  row("comm_time", s.comm_time_s, "s");
  row("eval_time", s.eval_time_s, "s");
  row("peak_rss", s.peak_rss_mib, "MiB");
  if (std::isfinite(s.peak_gpu_mib)) row("peak_gpu", s.peak_gpu_mib, "MiB");
  row("parameter_averagings", double(r.syncs.step.size()), "count");
  row("parameters", double(s.parameters), "count");
  if (s.steps_to_goal >= 0) row("steps_to_goal", double(s.steps_to_goal), "steps");
}

// The message of an error: as one process prints it, or with the rank and
// host of the process that had it.
std::string error_message(const Session& session, const std::string& prog, const std::string& run,
                          const std::string& what, bool usage, bool with_rank) {
  std::string message = prog + ": error: ";
  if (with_rank) {
    message += "rank " + std::to_string(session.rank()) + " on " + session.host();
    message += (run == "-" ? std::string() : ", run " + run) + ": ";  // "-": between runs
  }
  message += what;
  if (usage) message += "\n(see " + prog + " --help)";
  return message;
}

// Reports an error and ends: alone, with `code`; in an MPI job of several
// processes, by aborting the whole job, so that no rank waits for this one.
int fail(const Session& session, const std::string& prog, const std::string& run, const std::string& what, int code,
         bool usage) {
  const std::string message = error_message(session, prog, run, what, usage, session.size() > 1);
  ClaimQueue::release_held();  // the run is free for another job at once
  if (session.size() > 1) session.abort(message, code);
  std::fprintf(stderr, "%s\n", message.c_str());
  return code;
}

// Ends the start alike on every process: they all go on, or all exit with one
// status. Each process reads the same command line, study file and (usually)
// data folder, so an error there is, as a rule, every process's: rank 0
// prints it once, as one process would, and every process exits without
// MPI_Abort, whose banners buried one message under N copies. An error of
// some processes only (a node without the data) is printed by each of them
// with its rank and host, and rank 0 says which ranks could not start. Every
// process must call this at the same point: it is a collective. One process
// alone prints its error as it is.
int agree_on_start(const Session& session, const std::string& prog, const JobEnded& mine) {
  const std::vector<std::string> all = session.all_gather(mine.text());
  const bool alike = std::all_of(all.begin(), all.end(), [&](const std::string& t) { return t == all.front(); });
  if (alike) {
    if (mine.code > 0 && session.rank() == 0) {
      std::fprintf(stderr, "%s\n", error_message(session, prog, "-", mine.what, mine.usage, false).c_str());
    }
    return mine.code;
  }
  int code = 0, failed = 0;
  std::string ranks;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const int c = JobEnded::from_text(all[r]).code;
    if (c > 0) ranks += (failed++ ? ", " : "") + std::to_string(r);
    code = std::max(code, c);
  }
  if (mine.code > 0) {
    std::fprintf(stderr, "%s\n", error_message(session, prog, "-", mine.what, mine.usage, true).c_str());
  } else if (session.rank() == 0) {
    const std::string why = failed == 0 ? "the processes did not start alike (some were done, some not)"
                                        : std::to_string(failed) + " of " + std::to_string(all.size()) +
                                              " processes could not start (rank" + (failed > 1 ? "s " : " ") +
                                              ranks + ": " + (failed > 1 ? "their errors" : "its error") +
                                              " printed apart)";
    std::fprintf(stderr, "%s: error: %s; the job ends\n", prog.c_str(), why.c_str());
  }
  return std::max(code, 1);
}

// One run, on the console only; under mpirun, on all processes.
int run_single(Job& job) {
  const JobOptions& g = job.request.options;
  const bool lead = job.session.rank() == 0;
  PlannedRun& p = job.plan.runs.front();
  job.current_run = p.id;
  if (!g.quiet && lead) {
    print_header(job);
    std::printf("# config:");
    for (const auto& [k, v] : p.key_values) std::printf(" %s=%s", k.c_str(), to_text(v).c_str());
    std::printf("\n");
  }
  if (lead) {
    for (const auto& note : job.plan.notes) std::printf("%s\n", note.c_str());
    if (!g.quiet) {
      for (const auto& note : job.data_notes) std::printf("%s\n", note.c_str());
    }
  }
  std::vector<int> world_ranks(static_cast<std::size_t>(job.session.size()));
  for (int r = 0; r < job.session.size(); ++r) world_ranks[std::size_t(r)] = r;
  RunComm rc(world_ranks, p.config.workers, 0);
  ConsoleProgress console;
  const RunResult result = train_run(p.config, p.factory, job.data.at(p.config.dataset), *rc.comm,
                                     g.quiet || !lead ? nullptr : &console, job.execution);
  if (!lead) return 0;
  print_result(result);
  if (!g.expect_given) return 0;
  const double acc = result.summary.final_test_accuracy;
  const bool ok = result.summary.status == RunStatus::completed && acc >= g.expect_accuracy;
  std::printf("# check: final test accuracy %.4f %s %.4f: %s\n", acc, ok ? ">=" : "<", g.expect_accuracy,
              ok ? "ok" : "FAILED");
  return ok ? 0 : 3;
}

int engine_main(int argc, char** argv, const Workload& workload, const std::string& prog) {
  const Session session;  // MPI, when launched by mpirun or srun
  std::string current_run = "-";
  // The start: the command line, the study, the device, the threads and the
  // data, on each process alone; then the processes agree, before the first
  // collective, that they all go on.
  std::optional<Request> request;
  Plan plan;
  std::map<std::string, TrainingData> data;
  std::optional<Job> job;
  bool done = false;  // --help, --version, --rebuild_index
  JobEnded start = ending_of([&] {
    request = read_request(argc, argv, workload, session.rank() == 0);
    if (!request) {  // --help, --version: under mpirun, printed once
      done = true;
      return;
    }
    JobOptions& g = request->options;
    if (g.rebuild_index) {
      if (session.rank() == 0) {  // under mpirun, once
        std::vector<std::string> skipped;
        const std::size_t n = rebuild_index(request->study_dir, request->name, &skipped);
        for (const auto& s : skipped) std::printf("# skipped corrupt run file: %s\n", s.c_str());
        std::printf("# rebuilt %s/index.h5: %zu runs\n", request->study_dir.c_str(), n);
      }
      done = true;
      return;
    }
    plan = plan_runs(*request, workload);
    check_placement(*request, plan, g.dry_run_processes > 0 ? g.dry_run_processes : session.size());
    for (PlannedRun& p : plan.runs) p.factory = workload_model(dataset_spec(p.config.dataset), p.model_values);
    check_memory_formats(*request, plan);
    const at::Device device = resolve_device(g, request->stored, session.local_rank());
    // Not in a dry run: dpstudy-slurm plans on the submitting node with --device cpu.
    if (!g.dry_run) check_cuda_graphs(*request, plan, device);
    std::string gpu_driver;
    const std::string gpu = gpu_identity(device, g.deterministic, &gpu_driver);
    if (g.deterministic) set_deterministic(device);
    set_threads(g, request->stored, session);
    const int runs_at_once =
        resolve_runs_at_once(*request, plan, device, g.dry_run_processes > 0 ? g.dry_run_processes : session.size(), g);
    job.emplace(Job{session,
                    *request,
                    plan,
                    data,
                    {},
                    device,
                    gpu,
                    gpu_driver,
                    cpu_kernels(),
                    Execution{parse_parallelism(g.parallel), g.threads, 0, parse_cuda_graphs(g.cuda_graphs)},
                    prog,
                    workload.name,
                    argc,
                    argv,
                    current_run,
                    runs_at_once});
    load_data(*job);
  });
  if (done && start.code == JobEnded::go_on) start.code = 0;
  if (const int code = agree_on_start(session, prog, start); code != JobEnded::go_on) return code;
  // A collective: every process compares its data files with rank 0's.
  start = ending_of([&] { check_same_data(*job); });
  if (const int code = agree_on_start(session, prog, start); code != JobEnded::go_on) return code;
  try {
    const JobOptions& g = request->options;
    if (g.mode == "throughput") return run_throughput_mode(*job);
    if (!request->study_mode) return run_single(*job);
    return run_study(*job);
  } catch (const JobEnded& e) {  // rank 0's error, which every process learnt of
    if (session.rank() == 0) {
      std::fprintf(stderr, "%s\n", error_message(session, prog, "-", e.what, e.usage, false).c_str());
    }
    return e.code;
  } catch (const boost::program_options::error& e) {
    return fail(session, prog, current_run, e.what(), 2, true);
  } catch (const UsageError& e) {
    return fail(session, prog, current_run, e.what(), 2, true);
  } catch (const c10::OutOfMemoryError& e) {  // alone on its device, or every run at once failed so
    return fail(session, prog, current_run,
                std::string(e.what_without_backtrace()) +
                    " (give a smaller batch_size, fewer workers per process or fewer --runs_at_once; "
                    "docs/studies.md#runs-at-once)",
                1, false);
  } catch (const c10::Error& e) {
    return fail(session, prog, current_run, torch_message(e), 1, false);
  } catch (const std::exception& e) {
    return fail(session, prog, current_run, e.what(), 1, false);
  }
}

}  // namespace

int workload_main(int argc, char** argv, const Workload& workload) {
  const std::string prog = "dpstudy-" + workload.name;
  return stdout_exit_status(prog, engine_main(argc, argv, workload, prog));
}

}  // namespace dpstudy