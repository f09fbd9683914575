// `nascent eval --checkpoint F`: the test accuracy of a model that
// `nascent train` saved.
#include <chrono>

#include <fmt/format.h>

#include "apps/nascent/command.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/backends/device.h"
#include "nascent/data/dataset.h"
#include "nascent/models/fashion_mnist.h"

namespace {

struct Args {
  std::string checkpoint;
  std::string data_dir = nascent::data::default_fashion_mnist_dir();
  int threads = 0;
  std::string device = "cpu";
  int64_t batch_size = 1000;
};

int eval(const Args& args) {
  using namespace nascent;
  if (args.threads > 0) cpu::set_num_threads(args.threads);
  train::TrainOptions o =
      train::ClassifierTrainer::checkpoint_options(args.checkpoint);
  data::ImageDataset test_set =
      data::load_fashion_mnist(args.data_dir, data::Split::test);
  std::unique_ptr<Backend> device = make_backend(args.device);
  train::ClassifierTrainer trainer(o, *device, 60000,
                                   models::fashion_mnist_task());
  trainer.load(args.checkpoint);
  const auto start = std::chrono::steady_clock::now();
  train::EvalResult r = trainer.evaluate(test_set, args.batch_size);
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  fmt::print("{}: {} after {} steps ({} epochs)\n", args.checkpoint, o.model,
             trainer.steps(), trainer.epoch);
  fmt::print(
      "test accuracy {:.2f}% on {} images, loss {:.4f} ({:.0f} "
      "images/s, {})\n",
      100.0 * r.accuracy, r.count, r.loss, double(r.count) / s,
      describe_backend(*device));
  return 0;
}

}  // namespace

NASCENT_COMMAND("eval", "test accuracy of a checkpoint of `nascent train`",
                [](CLI::App& sub) -> std::function<int()> {
                  auto args = std::make_shared<Args>();
                  sub.add_option("-c,--checkpoint", args->checkpoint,
                                 "checkpoint written by nascent train")
                      ->required();
                  sub.add_option("--data", args->data_dir,
                                 "folder with Fashion-MNIST's IDX files")
                      ->capture_default_str();
                  sub.add_option("-t,--threads", args->threads,
                                 "CPU threads (default: NASCENT_NUM_THREADS "
                                 "or all cores)")
                      ->check(CLI::Range(1, 1024));
                  sub.add_option("-d,--device", args->device,
                                 "where to run: cpu, cuda or cuda:N")
                      ->capture_default_str();
                  sub.add_option("-b,--batch-size", args->batch_size,
                                 "images per forward pass")
                      ->check(CLI::Range(1, 100000))
                      ->capture_default_str();
                  return [args] { return eval(*args); };
                });
