// OpProfiler: a Backend decorator (a ForwardingBackend, like autodiff) that
// forwards every call to the backend it wraps and adds up the time each op
// takes, keyed by the op, its output and its first inputs ("conv2d f32[64,
// 32, 28, 28] <- f32[64, 1, 28, 28]"). Wrapped under autodiff, it sees the
// forward and the backward ops of a training step as the CPU backend runs
// them. Time is the calling thread's CPU time with one thread (steady on a
// shared machine), wall time otherwise.
#pragma once

#include <time.h>

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "nascent/core/forwarding.h"

namespace nascent::bench {

class OpProfiler final : public ForwardingBackend {
 public:
  OpProfiler(Backend& inner, bool cpu_clock)
      : ForwardingBackend(inner), cpu_(cpu_clock) {}

  struct Entry {
    double ms = 0.0;
    int64_t calls = 0;
  };
  const std::map<std::string, Entry>& entries() const { return entries_; }
  void clear() { entries_.clear(); }
  double now_ms() const {
    if (cpu_) {
      timespec ts;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
    }
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  std::string name() const override { return "profile(" + inner_.name() + ")"; }

 protected:
  void before(Op op, std::span<const Tensor* const> inputs,
              std::span<Tensor* const> written) override {
    std::string k = nascent::name(op);
    if (!written.empty() && written[0] != nullptr) {
      k = fmt::format("{} {}", k, written[0]->to_string());
    }
    int shown = 0;
    for (size_t i = 0; i < inputs.size() && shown < 2; ++i) {
      if (inputs[i] == nullptr) continue;
      k = fmt::format("{}{}{}", k, shown++ == 0 ? " <- " : ", ",
                      describe(*inputs[i]));
    }
    open_.emplace_back(std::move(k), now_ms());
  }
  void after(Op op, std::span<Tensor* const> written) override {
    Entry& e = entries_[open_.back().first];
    e.ms += now_ms() - open_.back().second;
    ++e.calls;
    open_.pop_back();
  }

 private:
  static std::string describe(const Tensor& t) {
    return (t.is_contiguous() ? "" : "strided ") + t.to_string();
  }

  bool cpu_;
  std::map<std::string, Entry> entries_;
  // Calls begun and not yet ended (an op that throws leaves its key here
  // until the next one ends; none nests on the same profiler).
  std::vector<std::pair<std::string, double>> open_;
};

}  // namespace nascent::bench
