// Where a training step of `nascent train`'s models spends its time, op by
// op: the trainer runs on autodiff over an OpProfiler over the CPU backend,
// and the table lists each op (forward and backward) by time per step.
//
//   train_profile [--model cnn|mlp] [--threads N] [--batch N] [--steps N]
//                 [--optimizer sgd|adam]
//
// With one thread the clock is the thread's CPU time, which other jobs on a
// shared machine do not inflate; bench/NOTES.md quotes these tables.
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "bench/op_profiler.h"
#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/models/fashion_mnist.h"

int main(int argc, char** argv) {
  using namespace nascent;
  train::TrainOptions o;
  o.optimizer = "sgd";
  o.lr = 0.01;
  o.momentum = 0.9;
  o.schedule = "constant";
  int threads = 1, steps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") {
      o.model = v;
    } else if (k == "--threads") {
      threads = std::atoi(v.c_str());
    } else if (k == "--batch") {
      o.batch_size = std::atoll(v.c_str());
    } else if (k == "--steps") {
      steps = std::atoi(v.c_str());
    } else if (k == "--optimizer") {
      o.optimizer = v;
      if (v != "sgd") o.lr = 1e-3;
    } else {
      fmt::print(stderr,
                 "usage: train_profile [--model cnn|mlp] [--threads N] "
                 "[--batch N] [--steps N] [--optimizer sgd|adam]\n");
      return 2;
    }
  }
  cpu::set_num_threads(threads);
  cpu::Backend cpu;
  bench::OpProfiler prof(cpu, cpu::num_threads() == 1);
  train::ClassifierTrainer trainer(o, prof, 60000,
                                   models::fashion_mnist_task());
  std::vector<data::Batch> batches;
  for (uint64_t i = 0; i < 4; ++i) {
    batches.push_back(
        {randn({o.batch_size, 1, 28, 28}, trainer.backend(), i),
         floor(rand({o.batch_size}, trainer.backend(), 100 + i) * 10.0)
             .cast(DType::i64)});
  }
  for (int i = 0; i < 3; ++i)
    trainer.step(batches[size_t(i) % 4]).item<float>();
  prof.clear();
  const double start = prof.now_ms();
  for (int i = 0; i < steps; ++i) {
    trainer.step(batches[size_t(i) % 4]).item<float>();
  }
  const double step_ms = (prof.now_ms() - start) / steps;
  std::vector<std::pair<double, std::string>> rows;
  double in_ops = 0.0;
  for (const auto& [key, e] : prof.entries()) {
    rows.emplace_back(e.ms / steps,
                      fmt::format("{:4.1f}x {}", double(e.calls) / steps, key));
    in_ops += e.ms / steps;
  }
  std::sort(rows.rbegin(), rows.rend());
  fmt::print(
      "{} batch {}, {} {}, {} threads ({} time): {:.2f} ms per step "
      "({:.0f} images/s), {:.2f} ms in backend ops\n",
      o.model, o.batch_size, o.optimizer, o.lr, cpu::num_threads(),
      cpu::num_threads() == 1 ? "CPU" : "wall", step_ms,
      double(o.batch_size) * 1e3 / step_ms, in_ops);
  for (const auto& [ms, what] : rows) {
    if (ms >= 0.01) fmt::print("{:8.3f} ms  {}\n", ms, what);
  }
  return 0;
}
