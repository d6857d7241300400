// The stop handlers (stop.hpp), in child processes: a handled signal only asks
// for a stop; a second SIGTERM or SIGINT ends the process as the signal would.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "dpstudy/stop.hpp"

namespace dpstudy {
namespace {

// Runs `body` in a child with the handlers installed; its wait status.
template <typename F>
int in_child(F body) {
  const pid_t pid = fork();
  if (pid == 0) {
    install_stop_handlers();
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(Stop, ASignalAsksForAStopAndNamesItself) {
  for (const int s : {SIGTERM, SIGINT, SIGUSR1}) {
    const int status = in_child([s] {
      if (stop_requested()) return 10;
      std::raise(s);
      if (!stop_requested()) return 11;
      const std::string name = stop_signal_name();
      return name == (s == SIGTERM ? "SIGTERM" : s == SIGINT ? "SIGINT" : "SIGUSR1") ? 0 : 12;
    });
    ASSERT_TRUE(WIFEXITED(status)) << "signal " << s;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "signal " << s;
  }
}

TEST(Stop, ASecondIntEndsTheProcessAndTermOrUsr1NeverDo) {
  const int status = in_child([] {
    std::raise(SIGUSR1);  // the warning first, then Ctrl-C twice
    std::raise(SIGINT);
    if (std::string(stop_signal_name()) != "SIGUSR1") return 1;
    std::raise(SIGINT);
    return 0;
  });
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  for (const int s : {SIGTERM, SIGUSR1}) {
    const int twice = in_child([s] {
      std::raise(s);
      std::raise(s);
      std::raise(s);
      return stop_requested() ? 0 : 1;
    });
    ASSERT_TRUE(WIFEXITED(twice)) << "signal " << s;
    EXPECT_EQ(WEXITSTATUS(twice), 0) << "signal " << s;
  }
}

}  // namespace
}  // namespace dpstudy
