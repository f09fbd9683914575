// The progress line of the training commands: redrawn in place on a
// terminal; on a log (stderr not a terminal), one line per tenth of the run.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include <fmt/format.h>

namespace nascent::cli {

class ProgressLine {
 public:
  ProgressLine(int64_t total, int width)
      : total_(total), width_(width), tty_(isatty(fileno(stderr)) != 0) {}

  // Draws "<prefix>[====>   ]<suffix>" for `done` of the total.
  void update(int64_t done, const std::string& prefix,
              const std::string& suffix) {
    const int64_t tenth = done * 10 / total_;
    if (!tty_ && tenth == last_tenth_ && done != total_) return;
    last_tenth_ = tenth;
    const int filled = int(done * width_ / total_);
    std::string bar(size_t(filled), '=');
    if (filled < width_) bar += '>';
    bar.resize(size_t(width_), ' ');
    fmt::print(stderr, "{}{}[{}]{}{}", tty_ ? "\r" : "", prefix, bar, suffix,
               tty_ ? "\033[K" : "\n");
    std::fflush(stderr);
  }
  // Clears the line on a terminal, before other output.
  void clear() {
    if (tty_) fmt::print(stderr, "\r\033[K");
  }

 private:
  int64_t total_;
  int width_;
  bool tty_;
  int64_t last_tenth_ = -1;
};

}  // namespace nascent::cli
