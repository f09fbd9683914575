// `nascent demo`: a small forward pass through the tensor API.
#include <chrono>

#include <fmt/format.h>

#include "apps/nascent/command.h"
#include "nascent/nascent.h"

namespace {

int demo(int threads) {
  using namespace nascent;
  if (threads > 0) cpu::set_num_threads(threads);
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

}  // namespace

NASCENT_COMMAND("demo", "run a small forward pass through the tensor API",
                [](CLI::App& sub) -> std::function<int()> {
                  auto threads = std::make_shared<int>(0);
                  sub.add_option("-t,--threads", *threads,
                                 "CPU threads (default: NASCENT_NUM_THREADS "
                                 "or all cores)")
                      ->check(CLI::Range(1, 1024));
                  return [threads] { return demo(*threads); };
                });
