#include "dpstudy/stop.hpp"

#include <atomic>
#include <csignal>
#include <initializer_list>

namespace dpstudy {
namespace {

// Atomics, not volatile sig_atomic_t: the handler runs on whichever thread the
// signal is delivered to, and the runs a process trains at once (threads of
// their own) read the flag; sig_atomic_t is safe only within one thread.
// Lock-free atomics are safe in a signal handler.
std::atomic<int> g_signal{0};               // the first stop signal received
std::atomic<int> g_interrupts{0};           // SIGINTs received
std::atomic<const char*> g_cause{nullptr};  // stop_for's cause: set once, never freed
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler may only use lock-free atomics");

extern "C" void on_stop_signal(int signal) {
  // Ctrl-C twice: the user means it. Not so SIGTERM: it comes from batch
  // systems and launchers (which may pass on one of their own as well), and
  // their escalation is SIGKILL (Slurm's after KillWait).
  if (signal == SIGINT && g_interrupts.fetch_add(1) > 0) {  // not the first
    std::signal(signal, SIG_DFL);
    std::raise(signal);  // delivered, with the default action, when the handler returns
    return;
  }
  int none = 0;
  g_signal.compare_exchange_strong(none, signal);
}

}  // namespace

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // file and MPI calls in progress go on
  for (const int s : {SIGTERM, SIGINT, SIGUSR1}) sigaction(s, &action, nullptr);
}

bool stop_requested() { return g_signal.load() != 0 || g_cause.load() != nullptr; }

void stop_for(const char* cause) {
  const char* none = nullptr;
  g_cause.compare_exchange_strong(none, cause);
}

std::string stop_cause() {
  if (*stop_signal_name()) return stop_signal_name();
  const char* cause = g_cause.load();
  return cause ? cause : "a signal to another process";
}

const char* stop_signal_name() {
  switch (g_signal.load()) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    default:
      return g_signal.load() == 0 ? "" : "a signal";
  }
}

}  // namespace dpstudy
