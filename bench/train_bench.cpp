// Training throughput of `nascent train`'s models: forward, cross-entropy,
// backward and an SGD step (momentum 0.9) per batch, on random batches held
// in memory, timed for about --seconds after three warm-up steps. Prints
// "images/s: N". bench/train_torch.py runs it beside PyTorch (see
// bench/run_train_bench.sh and NOTES.md); --device cuda trains on the GPU
// (bench/train_torch.py --device cuda compares with PyTorch eager there).
#include <chrono>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/backends/device.h"
#include "nascent/models/fashion_mnist.h"

int main(int argc, char** argv) {
  using namespace nascent;
  std::string model = "cnn";
  int threads = 1;
  int64_t batch = 64;
  double seconds = 2.0;
  std::string device = "cpu";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string key = argv[i], value = argv[i + 1];
    if (key == "--model") {
      model = value;
    } else if (key == "--threads") {
      threads = std::atoi(value.c_str());
    } else if (key == "--batch") {
      batch = std::atoll(value.c_str());
    } else if (key == "--device") {
      device = value;
    } else if (key == "--seconds") {
      seconds = std::atof(value.c_str());
    } else {
      fmt::print(stderr,
                 "usage: train_bench [--model cnn|mlp] [--threads N] "
                 "[--batch N] [--seconds S] [--device cpu|cuda]\n");
      return 2;
    }
  }
  cpu::set_num_threads(threads);
  std::unique_ptr<Backend> backend = make_backend(device);
  train::TrainOptions o;
  o.model = model;
  o.optimizer = "sgd";
  o.lr = 0.01;
  o.momentum = 0.9;
  o.schedule = "constant";
  o.batch_size = batch;
  train::ClassifierTrainer trainer(o, *backend, 60000,
                                   models::fashion_mnist_task());
  std::vector<data::Batch> batches;
  for (uint64_t i = 0; i < 8; ++i) {
    Tensor labels = floor(rand({batch}, trainer.backend(), 100 + i) * 10.0)
                        .cast(DType::i64);
    batches.push_back(
        {randn({batch, 1, 28, 28}, trainer.backend(), i), labels});
  }
  using Clock = std::chrono::steady_clock;
  int64_t step = 0;
  for (; step < 3; ++step)
    trainer.step(batches[size_t(step) % 8]).item<float>();
  const auto start = Clock::now();
  int64_t timed = 0;
  double elapsed = 0.0;
  // A GPU's steps are only enqueued here: the loss of the last one, read
  // back after the loop, waits for all of them before the clock stops (the
  // CPU backend has finished each step when it returns).
  Tensor loss;
  while (elapsed < seconds || timed < 5) {
    loss = trainer.step(batches[size_t(step++) % 8]);
    ++timed;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  loss.item<float>();
  elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  fmt::print("{} batch {} {}: {} steps in {:.2f} s, images/s: {:.1f}\n", model,
             batch, describe_backend(*backend), timed, elapsed,
             double(timed * batch) / elapsed);
  return 0;
}
