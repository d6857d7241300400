// The console's report of a run (progress_sink.hpp): epoch, step, loss,
// accuracy and ETA; a study runner adds "run i of n".
#pragma once

#include <string>
#include <utility>

#include "dpstudy/progress_sink.hpp"

namespace dpstudy {

// "  val acc 85.10 %  test acc 84.90 %" for an evaluation event, "" otherwise.
std::string format_accuracy(const ProgressEvent& e);

// Prints to stdout: every evaluation, and at most every `interval_s` seconds between.
class ConsoleProgress : public ProgressSink {
 public:
  explicit ConsoleProgress(double interval_s = 5.0, std::string prefix = "") : interval_s_(interval_s), prefix_(std::move(prefix)) {}
  void message(const std::string& line) override;
  void progress(const ProgressEvent& e) override;

 private:
  double interval_s_;
  std::string prefix_;
  double last_print_s_ = -1e9;
};

}  // namespace dpstudy
