// How a Trainer uses the process's threads (docs/engine.md#threads): its
// workers side by side, one thread each, or each operation spread over all.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <exception>

#if defined(_OPENMP)
#include <omp.h>
#endif
// -fsanitize=thread: GCC says so with __SANITIZE_THREAD__, Clang through __has_feature.
#if defined(__SANITIZE_THREAD__)
#define DPSTUDY_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DPSTUDY_TSAN 1
#endif
#endif
#if defined(DPSTUDY_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

#include "dpstudy/error.hpp"
#include "dpstudy/trainer.hpp"

namespace dpstudy {
namespace {

// Workers side by side open an OpenMP region of their own (this file is
// compiled with OpenMP) and need LibTorch on OpenMP: inside a region it runs
// nested parallel loops inline and OpenBLAS its products on one thread.
#if defined(_OPENMP) && AT_PARALLEL_OPENMP
constexpr bool kSideBySide = true;
#else
constexpr bool kSideBySide = false;
#endif

// ThreadSanitizer sees no synchronisation inside an uninstrumented libgomp, so
// the start and the end of a parallel region are told to it: every thread of
// the team acquires what the caller released before it, and the caller what
// each thread released at its end. Without them each step reports the last
// step's stack variables as raced (docs/building.md, "Sanitizers").
#if defined(_OPENMP)
void tsan_release([[maybe_unused]] void* at) {
#if defined(DPSTUDY_TSAN)
  __tsan_release(at);
#endif
}
void tsan_acquire([[maybe_unused]] void* at) {
#if defined(DPSTUDY_TSAN)
  __tsan_acquire(at);
#endif
}
#endif

// LibTorch's thread count before a Trainer with its workers side by side set it
// to 1 (0: none did), so that the next Trainer told no count finds the process's.
int threads_before_side_by_side = 0;

}  // namespace

int Trainer::process_threads() {
  const int n = at::get_num_threads();
  return n == 1 && threads_before_side_by_side > 0 ? threads_before_side_by_side : n;
}

Parallelism parse_parallelism(const std::string& text) {
  if (text == "auto") return Parallelism::automatic;
  if (text == "workers") return Parallelism::workers;
  if (text == "operations") return Parallelism::operations;
  throw ConfigError("parallel", text, "is not one of: auto, workers, operations");
}

std::string to_string(Parallelism p) {
  return p == Parallelism::automatic ? "auto" : p == Parallelism::workers ? "workers" : "operations";
}

Parallelism resolve_parallelism(Parallelism p, int local_workers, int threads, const at::Device& device) {
  if (!device.is_cpu()) {  // the host launches; streams of their own let the GPU overlap the workers
    if (p != Parallelism::automatic) return p;
    return local_workers > 1 ? Parallelism::workers : Parallelism::operations;
  }
  if (threads <= 1) return Parallelism::workers;  // the same: every operation on the one thread
  if (!kSideBySide) {
    if (p == Parallelism::workers) {
      throw ConfigError("parallel", "workers",
                        "needs OpenMP: this dpstudy was built without it, or its LibTorch does not run on OpenMP; "
                        "use --parallel operations, or --threads 1 for the same bits");
    }
    return Parallelism::operations;
  }
  if (p != Parallelism::automatic) return p;
  return local_workers >= threads ? Parallelism::workers : Parallelism::operations;
}

void Trainer::claim_threads() const {
  const int want = side_by_side_ ? 1 : threads_;
  const int now = at::get_num_threads();
  if (now == want) return;  // setting it clears LibTorch's oneDNN caches: only on a change
  threads_before_side_by_side = side_by_side_ ? now : 0;
  at::set_num_threads(want);
}

void Trainer::for_each_local(int n, const std::function<void(int)>& task) const {
#if defined(_OPENMP)
  const int team = side_by_side_ ? std::min(threads_, n) : 1;
#else
  const int team = 1;  // resolve_parallelism never chose workers with more than one thread
#endif
  if (team <= 1) {
    for (int i = 0; i < n; ++i) task(i);
    return;
  }
#if defined(_OPENMP)
  // Contiguous equal shares, as at::parallel_for would give; LibTorch's count
  // is 1 (claim_threads), so what a task starts runs on its thread alone. An
  // exception cannot leave the region: the first is kept and rethrown.
  std::exception_ptr error;
  char opened = 0, closed = 0;  // the region's edges, as addresses for tsan_release / tsan_acquire
  tsan_release(&opened);
#pragma omp parallel num_threads(team)
  {
    tsan_acquire(&opened);
    const int t = omp_get_thread_num(), share = (n + team - 1) / team;
    for (int i = t * share; i < std::min(n, (t + 1) * share); ++i) {
      try {
        task(i);
      } catch (...) {
#pragma omp critical(dpstudy_side_by_side_error)
        if (!error) error = std::current_exception();
      }
    }
    tsan_release(&closed);
  }
  tsan_acquire(&closed);
  if (error) std::rethrow_exception(error);
#endif
}

}  // namespace dpstudy
