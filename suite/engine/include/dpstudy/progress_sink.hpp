// Where a run reports what it is doing: the events a Trainer emits as it
// trains and evaluates, and the interface that takes them. The console's
// implementation is the job's (progress.hpp).
#pragma once

#include <cstdint>
#include <string>

namespace dpstudy {

struct ProgressEvent {
  std::int64_t step = 0, total_steps = 0;
  int epoch = 0, epochs = 0;  // epoch is 1-based: the one in progress
  double loss = 0;            // recent training loss
  double test_accuracy = -1;  // -1: no evaluation at this event; NaN: test split not due (test_every)
  double lr = 0;
  double elapsed_s = 0;
  bool evaluation = false;
  double val_accuracy = -1;  // -1: no validation split, or no evaluation at this event
};

class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void message(const std::string& line) = 0;
  virtual void progress(const ProgressEvent& e) = 0;
};

}  // namespace dpstudy
