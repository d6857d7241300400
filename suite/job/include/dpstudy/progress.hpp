// Where a run reports what it is doing. The console implementation prints
// epoch, step, loss, accuracy and ETA; a study runner adds "run i of n".
#pragma once

#include <cstdint>
#include <string>

namespace dpstudy {

struct ProgressEvent {
  std::int64_t step = 0, total_steps = 0;
  int epoch = 0, epochs = 0;          // epoch is 1-based: the one in progress
  double loss = 0;                    // recent training loss
  double test_accuracy = -1;          // -1: no evaluation at this event; NaN: test split not due (test_every)
  double lr = 0;
  double elapsed_s = 0;
  bool evaluation = false;
  double val_accuracy = -1;           // -1: no validation split, or no evaluation at this event
};

// "  val acc 85.10 %  test acc 84.90 %" for an evaluation event, "" otherwise.
std::string format_accuracy(const ProgressEvent& e);

class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void message(const std::string& line) = 0;
  virtual void progress(const ProgressEvent& e) = 0;
};

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
