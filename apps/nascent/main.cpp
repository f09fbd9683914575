// The nascent command line. For now one command, `demo`, exercises the
// tensor API end to end; training and LLaMA commands join it later.
#include <chrono>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "nascent/nascent.h"

namespace {

int demo() {
  using namespace nascent;
  cpu::Backend cpu;
  auto x = randn({64, 784}, cpu, 1);
  auto w = randn({784, 10}, cpu, 2);
  auto t0 = std::chrono::steady_clock::now();
  auto y = softmax(matmul(x, w) + 1.0f, -1);
  std::vector<float> host = y.to_vector<float>();
  auto t1 = std::chrono::steady_clock::now();
  double row_sum = 0;
  for (int j = 0; j < 10; ++j) row_sum += host[size_t(j)];
  fmt::print("nascent demo on {} ({} threads)\n", cpu.name(),
             cpu::num_threads());
  fmt::print("  y = softmax(x @ w + 1): {} in {:.3f} ms\n", y.to_string(),
             std::chrono::duration<double, std::milli>(t1 - t0).count());
  fmt::print("  first row sums to {:.6f}; argmax of rows 0..7:", row_sum);
  std::vector<int64_t> best = argmax(y, -1).to_vector<int64_t>();
  for (int i = 0; i < 8; ++i) fmt::print(" {}", best[size_t(i)]);
  fmt::print("\n");
  return 0;
}

void usage() {
  fmt::print(
      "usage: nascent [command]\n\n"
      "commands:\n"
      "  demo    run a small forward pass through the tensor API (default)\n"
      "  help    show this message\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "demo";
  try {
    if (cmd == "demo") return demo();
    if (cmd == "help" || cmd == "--help" || cmd == "-h") {
      usage();
      return 0;
    }
    fmt::print(stderr, "nascent: unknown command '{}'\n\n", cmd);
    usage();
    return 2;
  } catch (const nascent::Error& e) {
    fmt::print(stderr, "nascent: {}\n", e.what());
    return 1;
  }
}
