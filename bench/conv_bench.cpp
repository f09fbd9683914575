// Times the convolutions and pooling of the Fashion-MNIST CNN (batch 64:
// conv 1->32 3x3 pad 1 on 28x28, 2x2 max pool, conv 32->64 3x3 pad 1 on
// 14x14, 2x2 max pool) on the CPU backend, forward and backward, at the
// thread counts given. run_conv_bench.sh runs it beside PyTorch
// (torch_conv.py, same cases and method) and prints the ratio table.
//
// Output: one line per case, "<case> <threads> <ms per call>", the best of
// several rounds of about 20 ms (the machine is shared: the minimum is the
// least disturbed).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "nascent/nascent.h"

namespace {

using nascent::Conv2dParams;
using nascent::Pool2dParams;
using nascent::Shape;
using nascent::Tensor;

double seconds_now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Calls per round so that a round lasts about 20 ms.
int calls_per_round(const std::function<void()>& fn) {
  fn();
  fn();
  double t0 = seconds_now();
  fn();
  return std::max(1, int(0.02 / std::max(seconds_now() - t0, 1e-6)));
}

// Process CPU time (all threads), for single-thread runs on a busy machine:
// unlike wall time it does not count the time the process sat descheduled.
double cpu_seconds_now() {
  return double(std::clock()) / CLOCKS_PER_SEC;
}

// One round: ms per call averaged over `calls` calls, by wall or CPU clock.
double round_ms(const std::function<void()>& fn, int calls, bool cpu_clock) {
  auto now = cpu_clock ? cpu_seconds_now : seconds_now;
  double start = now();
  for (int i = 0; i < calls; ++i) fn();
  return (now() - start) / calls * 1e3;
}

struct Case {
  std::string name;
  std::function<void()> run;
};

std::vector<Case> make_cases(nascent::Backend& cpu) {
  Conv2dParams pad1;
  pad1.padding[0] = pad1.padding[1] = 1;
  Pool2dParams pool2;  // 2x2, stride 2.
  std::vector<Case> cases;
  struct Layer {
    const char* name;
    Shape x, w;
  };
  for (const Layer& l : {Layer{"conv1", {64, 1, 28, 28}, {32, 1, 3, 3}},
                         Layer{"conv2", {64, 32, 14, 14}, {64, 32, 3, 3}}}) {
    Tensor x = nascent::randn(l.x, cpu, 1);
    Tensor w = nascent::randn(l.w, cpu, 2);
    Tensor b = nascent::randn({l.w[0]}, cpu, 3);
    Tensor y = nascent::conv2d(x, w, &b, pad1);
    Tensor g = nascent::randn(y.shape(), cpu, 4);
    std::string n = l.name;
    cases.push_back({n + "_fwd", [=] { nascent::conv2d(x, w, &b, pad1); }});
    cases.push_back({n + "_bwd_input",
                     [=] { nascent::conv2d_backward_input(g, w, l.x, pad1); }});
    cases.push_back({n + "_bwd_weight", [=] {
                       nascent::conv2d_backward_weight(x, g, l.w, pad1);
                     }});
  }
  struct Pool {
    const char* name;
    Shape x;
  };
  for (const Pool& l :
       {Pool{"pool1", {64, 32, 28, 28}}, Pool{"pool2", {64, 64, 14, 14}}}) {
    const Shape shape = l.x;
    Tensor x = nascent::randn(shape, cpu, 5);
    const auto forward = nascent::max_pool2d_with_indices(x, pool2);
    const Tensor indices = forward.second;
    Tensor g = nascent::randn(forward.first.shape(), cpu, 6);
    std::string n = l.name;
    cases.push_back(
        {n + "_max_fwd", [=] { nascent::max_pool2d_with_indices(x, pool2); }});
    cases.push_back({n + "_max_bwd", [=] {
                       nascent::max_pool2d_backward(g, indices, shape, pool2);
                     }});
  }
  return cases;
}

}  // namespace

// Without --serve: for each thread count and case, the best of `rounds`
// rounds. With --serve (used by torch_conv.py, so that nascent and PyTorch
// rounds alternate and see the same load on a shared machine): reads lines
// "<case> <threads> <wall|cpu>" and answers each with the ms of one round.
int main(int argc, char** argv) {
  std::vector<int> threads = {1, 2};
  int rounds = 7;
  std::string filter;
  bool serve = false;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    bool has_value = i + 1 < argc;
    if (flag == "--serve") {
      serve = true;
    } else if (flag == "--threads" && has_value) {
      threads.clear();
      for (char* s = argv[++i]; *s;) {
        threads.push_back(int(std::strtol(s, &s, 10)));
        if (*s == ',') ++s;
      }
    } else if (flag == "--filter" && has_value) {
      filter = argv[++i];
    } else if (flag == "--rounds" && has_value) {
      rounds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--threads 1,2] [--rounds 7] [--filter name] "
                   "[--serve]\n",
                   argv[0]);
      return 2;
    }
  }
  nascent::Backend& cpu = nascent::default_backend();
  std::vector<Case> cases = make_cases(cpu);
  std::map<std::pair<std::string, int>, int> calls;
  auto run_round = [&](const Case& c, int t, bool cpu_clock) {
    if (nascent::cpu::num_threads() != t) nascent::cpu::set_num_threads(t);
    auto key = std::make_pair(c.name, t);
    if (!calls.count(key)) calls[key] = calls_per_round(c.run);
    return round_ms(c.run, calls[key], cpu_clock);
  };
  if (serve) {
    char name[128], clock_name[8];
    int t;
    while (std::scanf("%127s %d %7s", name, &t, clock_name) == 3) {
      auto it = std::find_if(cases.begin(), cases.end(),
                             [&](const Case& c) { return c.name == name; });
      const bool cpu_clock = std::string(clock_name) == "cpu";
      std::printf("%.4f\n",
                  it == cases.end() ? -1.0 : run_round(*it, t, cpu_clock));
      std::fflush(stdout);
    }
    return 0;
  }
  for (int t : threads) {
    for (const Case& c : cases) {
      if (c.name.find(filter) == std::string::npos) continue;
      double best = 1e30;
      for (int r = 0; r < rounds; ++r) {
        best = std::min(best, run_round(c, t, false));
      }
      std::printf("%s %d %.4f\n", c.name.c_str(), t, best);
      std::fflush(stdout);
    }
  }
  return 0;
}
