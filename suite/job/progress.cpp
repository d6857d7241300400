#include "dpstudy/progress.hpp"

#include <cmath>
#include <cstdio>

namespace dpstudy {

std::string format_accuracy(const ProgressEvent& e) {
  char buf[64] = "";
  int n = 0;
  if (e.val_accuracy >= 0) n = std::snprintf(buf, sizeof buf, "  val acc %6.2f %%", 100 * e.val_accuracy);
  if (e.test_accuracy >= 0 && n >= 0)
    std::snprintf(buf + n, sizeof buf - std::size_t(n), "  test acc %6.2f %%", 100 * e.test_accuracy);
  return buf;
}

void ConsoleProgress::message(const std::string& line) {
  std::printf("%s%s\n", prefix_.c_str(), line.c_str());
  std::fflush(stdout);
}

void ConsoleProgress::progress(const ProgressEvent& e) {
  if (!e.evaluation && e.elapsed_s - last_print_s_ < interval_s_) return;
  last_print_s_ = e.elapsed_s;
  const double eta = e.step > 0 ? e.elapsed_s * double(e.total_steps - e.step) / double(e.step) : 0;
  const std::string acc = format_accuracy(e);
  std::printf("%sepoch %d/%d  step %lld/%lld  loss %.4f%s  lr %.4g  %.1f s  ETA %.1f s\n", prefix_.c_str(),
              e.epoch, e.epochs, (long long)e.step, (long long)e.total_steps, e.loss, acc.c_str(), e.lr, e.elapsed_s, eta);
  std::fflush(stdout);
}

}  // namespace dpstudy
