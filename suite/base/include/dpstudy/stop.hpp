// A graceful stop of a study on SIGTERM (Slurm's time limit, scancel, a
// requeue, mpirun passing on Ctrl-C), SIGUSR1 (dpstudy-slurm's warning before
// the time limit) or SIGINT (Ctrl-C): each run in progress saves a checkpoint
// at the next step all its processes agree on (Trainer::run), no run starts
// after it, and the study exits with status 5. A second SIGINT (Ctrl-C pressed
// twice) ends the process at once, as if there were no handler; SIGTERM and
// SIGUSR1 never do (SIGTERM comes from batch systems and launchers, whose
// escalation is SIGKILL: Slurm's after KillWait).
#pragma once

#include <string>

namespace dpstudy {

// Installs the handlers (studies only: a single run has nowhere to checkpoint).
void install_stop_handlers();

bool stop_requested();
// The same stop without a signal: a run of this process that failed stops the
// runs it trains beside it (--runs_at_once). `cause` (a literal) is what
// stop_cause() then says.
void stop_for(const char* cause);
// "SIGTERM", "SIGUSR1", "SIGINT", or "" before any.
const char* stop_signal_name();
// What stopped a study: the signal this process received, or "a signal to
// another process" (one of the job's processes received it and told the others).
std::string stop_cause();

}  // namespace dpstudy
