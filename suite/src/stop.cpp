#include "dpstudy/stop.hpp"

#include <csignal>
#include <initializer_list>

namespace dpstudy {
namespace {

volatile std::sig_atomic_t g_signal = 0;       // the first stop signal received
volatile std::sig_atomic_t g_terminations = 0;  // SIGTERMs and SIGINTs received

extern "C" void on_stop_signal(int signal) {
  if (signal != SIGUSR1 && ++g_terminations > 1) {
    // Asked twice to terminate (not warned, as USR1 warns): the user means it.
    std::signal(signal, SIG_DFL);
    std::raise(signal);  // delivered, with the default action, when the handler returns
    return;
  }
  if (g_signal == 0) g_signal = signal;
}

}  // namespace

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // file and MPI calls in progress go on
  for (const int s : {SIGTERM, SIGINT, SIGUSR1}) sigaction(s, &action, nullptr);
}

bool stop_requested() { return g_signal != 0; }

const char* stop_signal_name() {
  switch (g_signal) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    default: return g_signal == 0 ? "" : "a signal";
  }
}

void request_stop(int signal) { on_stop_signal(signal); }

void clear_stop() {
  g_signal = 0;
  g_terminations = 0;
}

}  // namespace dpstudy
