// A fault-injection point for the kill-and-resume tests: when the environment
// variable DPSTUDY_TEST_KILL_AT is "NAME:K", the K-th call of kill_point("NAME")
// in this process sends SIGKILL to itself, a real kill at a chosen moment
// (mid-run, inside a checkpoint, a run file or the index). Unset, it does nothing.
// DPSTUDY_TEST_KILL_SIGNAL=TERM, INT or USR1 sends that signal instead (a stop,
// stop.hpp, at a chosen step), and a list such as INT,INT each in turn;
// DPSTUDY_TEST_KILL_RANK=R, under MPI, limits it to world rank R.
#pragma once

namespace dpstudy {

void kill_point(const char* name);

// The same for an error: with DPSTUDY_TEST_FAIL_AT="NAME:K" (and, under MPI,
// DPSTUDY_TEST_FAIL_RANK=R for world rank R only), the K-th pass through
// fail_point("NAME") throws dpstudy::Error, as a real failure would.
void fail_point(const char* name);

// And for the GPU running out of memory: with DPSTUDY_TEST_OOM_AT="NAME:K" (and
// DPSTUDY_TEST_OOM_RANK=R), true on the K-th pass, where the caller throws
// LibTorch's OutOfMemoryError as the allocator would (the CPU has none).
bool out_of_memory_point(const char* name);

// And for any other error of LibTorch's: with DPSTUDY_TEST_TORCH_ERROR_AT="NAME:K"
// (and DPSTUDY_TEST_TORCH_ERROR_RANK=R), true on the K-th pass, where the caller
// throws a c10::Error, as an operation LibTorch refuses would.
bool torch_error_point(const char* name);

}  // namespace dpstudy
