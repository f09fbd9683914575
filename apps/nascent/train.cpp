// `nascent train`: trains a CNN (or an MLP) on Fashion-MNIST on the CPU
// (or a GPU with --device cuda), printing a progress bar, the loss, images/s
// and the test accuracy of each epoch, and checkpoints after every epoch
// (--resume continues one, bit for bit). With no arguments it is the CLI's
// default command. --distributed mpi (under mpirun) or nccl (with --nproc)
// trains data-parallel: each step's batch is shared out between the ranks.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "apps/nascent/command.h"
#include "apps/nascent/launch.h"
#include "apps/nascent/progress.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/backends/device.h"
#include "nascent/data/dataset.h"
#include "nascent/dist/environment.h"
#include "nascent/models/fashion_mnist.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Args {
  nascent::train::TrainOptions options;
  bool lr_given = false;
  bool epochs_given = false;
  int threads = 0;
  std::string device = "cpu";
  std::string data_dir = nascent::data::default_fashion_mnist_dir();
  std::string output;
  std::string resume;
  int64_t save_every = 0;
  std::string distributed;  // "", "mpi", "nccl" or "local".
  int nproc = 0;            // Ranks to launch (nccl).
};

int launch(const Args& args) {
  using namespace nascent;
  if (args.distributed != "nccl") {
    throw ValueError(
        "train: --nproc starts NCCL ranks (--distributed nccl --device cuda); "
        "MPI runs start under mpirun: mpirun -np N nascent train "
        "--distributed mpi");
  }
  return cli::launch_ranks(
      args.nproc, cli::without_option(cli::program_arguments(), "--nproc"),
      make_nccl_clique_id());
}

int train(Args args);

// Data-parallel runs: an error on one rank ends every rank (the others
// would wait for it in their next collective).
int train_rank(Args args) {
  using namespace nascent;
  if (args.nproc > 0) return launch(args);
  if (args.distributed.empty()) return train(args);
  const dist::Placement at = dist::placement_from_environment();
  if (args.distributed == "nccl" && args.device == "cuda") {
    args.device = fmt::format("cuda:{}", at.local_rank);
  }
  if (args.threads == 0 && args.device == "cpu") {
    // The host's cores, shared out between the ranks on it.
    const int cores = int(std::thread::hardware_concurrency());
    args.threads = std::max(1, cores / std::max(1, at.local_size));
  }
  return train(args);
}

// The run itself, after the set-up: `lead` (rank 0, or the only process)
// prints.
int run(const Args& args, Clock::time_point start, nascent::Backend& device,
        nascent::dist::Communicator* comm) {
  using namespace nascent;
  const train::TrainOptions& o = args.options;
  const bool lead = comm == nullptr || comm->rank() == 0;
  data::ImageDataset train_set =
      data::load_fashion_mnist(args.data_dir, data::Split::train);
  data::ImageDataset test_set =
      data::load_fashion_mnist(args.data_dir, data::Split::test);

  train::ClassifierTrainer trainer(o, device, train_set.size(),
                                   models::fashion_mnist_task(), comm);
  if (!args.resume.empty()) trainer.load(args.resume);
  data::DataLoader loader(train_set, trainer.loader_options(),
                          trainer.backend());
  // Rank 0 speaks for the run; the others print only their errors.
  auto say = [lead](const std::string& line) {
    if (lead) fmt::print("{}", line);
  };
  say(
      fmt::format("nascent train: {} ({} parameters), {}, lr {}, batch {}, {} "
                  "epochs, seed {}, {}\n",
                  o.model, trainer.model().num_parameters(), o.optimizer, o.lr,
                  o.batch_size, o.epochs, o.seed, describe_backend(device)));
  if (comm != nullptr) {
    say(fmt::format(
        "distributed: {} ranks over {}, about {} images per rank per step\n",
        comm->world_size(), comm->name(),
        (o.batch_size + comm->world_size() - 1) / comm->world_size()));
  }
  say(fmt::format("data: {} training and {} test images from {} ({:.1f} s)\n",
                  train_set.size(), test_set.size(), args.data_dir,
                  seconds_since(start)));
  if (!args.resume.empty() && lead) {
    fmt::print("resumed from {} at epoch {}, batch {} (step {})\n", args.resume,
               trainer.epoch + 1, trainer.next_batch, trainer.steps());
  }

  train::EvalResult test;
  double train_seconds = 0.0;
  while (trainer.epoch < o.epochs) {
    const int64_t total = loader.num_batches();
    cli::ProgressLine progress(total, 30);
    const auto epoch_start = Clock::now();
    // The losses add up where they are computed; reading the sum back
    // waits for the device, which is free on the CPU but would stall a
    // GPU's queue every step, so there it happens every `sync_every` steps.
    const int64_t sync_every = args.device == "cpu" ? 1 : 50;
    // Per example: a step's loss is the mean over this rank's share.
    Tensor loss_total;
    double loss_sum = 0.0;
    int64_t loss_count = 0, steps = 0, images = 0;
    auto batches = loader.epoch(trainer.epoch, trainer.next_batch);
    for (auto it = batches.begin(); it != batches.end(); ++it) {
      data::Batch b = *it;
      const int64_t local = b.labels.numel();
      // WebGPU has no f64: there the running sum of the losses stays f32.
      Tensor loss = trainer.step(b).cast(args.device == "webgpu" ? DType::f32
                                                                 : DType::f64) *
                    double(local);
      loss_total = loss_total.defined() ? loss_total + loss : loss;
      loss_count += local;
      images += b.total;
      ++steps;
      trainer.next_batch = it.index() + 1;
      if (steps % sync_every != 0 && trainer.next_batch < total) {
        continue;
      }
      loss_sum = loss_total.item<double>();
      if (!lead) continue;
      progress.update(
          trainer.next_batch,
          fmt::format("epoch {}/{} ", trainer.epoch + 1, o.epochs),
          fmt::format(" {}/{} loss {:.4f} {:.0f} img/s", trainer.next_batch,
                      total,
                      loss_sum / double(std::max<int64_t>(1, loss_count)),
                      double(images) / seconds_since(epoch_start)));
      if (args.save_every > 0 && trainer.steps() % args.save_every == 0 &&
          trainer.next_batch < total) {
        trainer.save(args.output);  // Mid-epoch: --resume picks up here.
      }
    }
    if (comm != nullptr) {
      // The epoch's loss over every rank's examples.
      std::vector<float> sums =
          comm->all_reduce(from_vector(std::vector<float>{float(loss_sum),
                                                          float(loss_count)},
                                       trainer.backend()))
              .to_vector<float>();
      loss_sum = sums[0];
      loss_count = int64_t(sums[1]);
    }
    const double epoch_seconds = seconds_since(epoch_start);
    train_seconds += epoch_seconds;
    if (lead) progress.clear();
    ++trainer.epoch;
    trainer.next_batch = 0;
    trainer.save(args.output);
    const auto eval_start = Clock::now();
    test = trainer.evaluate(test_set);
    say(fmt::format(
        "epoch {}/{}: loss {:.4f}, {:.0f} images/s ({:.1f} s); test "
        "loss {:.4f}, accuracy {:.2f}% ({:.1f} s)\n",
        trainer.epoch, o.epochs,
        loss_count > 0 ? loss_sum / double(loss_count) : 0.0,
        double(images) / epoch_seconds, epoch_seconds, test.loss,
        100.0 * test.accuracy, seconds_since(eval_start)));
    std::fflush(stdout);
  }
  if (test.count == 0) test = trainer.evaluate(test_set);  // Nothing left.
  say(fmt::format(
      "done in {:.1f} s ({:.1f} s training): test accuracy {:.2f}%; "
      "checkpoint {}\n",
      seconds_since(start), train_seconds, 100.0 * test.accuracy, args.output));
  return 0;
}

int train(Args args) {
  using namespace nascent;
  if (args.threads > 0) cpu::set_num_threads(args.threads);
  train::TrainOptions& o = args.options;
  if (!args.lr_given && o.optimizer == "sgd") o.lr = 0.05;
  if (!args.resume.empty()) {
    // The run continues with the options it started with.
    train::TrainOptions saved =
        train::ClassifierTrainer::checkpoint_options(args.resume);
    if (args.epochs_given) saved.epochs = std::max(saved.epochs, o.epochs);
    o = saved;
  }
  if (args.output.empty()) {
    args.output = fmt::format("fashion-mnist-{}.safetensors", o.model);
  }
  const auto start = Clock::now();
  std::unique_ptr<Backend> device = make_backend(args.device);
  std::unique_ptr<dist::Communicator> comm;
  if (!args.distributed.empty()) {
    comm = make_communicator(args.distributed, *device);
  }
  try {
    return run(args, start, *device, comm.get());
  } catch (const Error& e) {
    if (comm == nullptr || comm->world_size() == 1) throw;
    fmt::print(stderr, "nascent: rank {} of {}: {}\n", comm->rank(),
               comm->world_size(), e.what());
    std::fflush(stderr);
    comm->abort(1);
  }
  return 1;  // Not reached: abort() ends the process.
}

}  // namespace

NASCENT_COMMAND(
    "train", "train a CNN or MLP on Fashion-MNIST (the default command)",
    [](CLI::App& sub) -> std::function<int()> {
      auto args = std::make_shared<Args>();
      nascent::train::TrainOptions& o = args->options;
      sub.add_option("-m,--model", o.model, "cnn or mlp")
          ->check(CLI::IsMember({"cnn", "mlp"}))
          ->capture_default_str();
      CLI::Option* epochs = sub.add_option("-e,--epochs", o.epochs,
                                           "passes over the training set")
                                ->check(CLI::Range(1, 1000))
                                ->capture_default_str();
      sub.add_option("-b,--batch-size", o.batch_size, "images per step")
          ->check(CLI::Range(1, 60000))
          ->capture_default_str();
      CLI::Option* lr =
          sub.add_option(
                 "--lr", o.lr,
                 "peak learning rate (default 0.001 for adam/adamw, 0.05 "
                 "for sgd), cosine-annealed to 0")
              ->check(CLI::PositiveNumber);
      sub.add_option("--optimizer", o.optimizer, "adam, adamw or sgd")
          ->check(CLI::IsMember({"adam", "adamw", "sgd"}))
          ->capture_default_str();
      sub.add_option("-t,--threads", args->threads,
                     "CPU threads (default: NASCENT_NUM_THREADS or all cores)")
          ->check(CLI::Range(1, 1024));
      sub.add_option("-d,--device", args->device,
                     "where to train: cpu, cuda, cuda:N or webgpu")
          ->capture_default_str();
      sub.add_option("-s,--seed", o.seed,
                     "seed of the initialisation and the data order")
          ->capture_default_str();
      sub.add_option("-o,--output", args->output,
                     "checkpoint path (default fashion-mnist-MODEL."
                     "safetensors), written after every epoch");
      sub.add_option("--resume", args->resume,
                     "continue training from this checkpoint with its "
                     "options; --epochs may extend the run (the schedule "
                     "then stretches to the new length)");
      sub.add_option("--save-every", args->save_every,
                     "also checkpoint every N steps (0: after each epoch "
                     "only)")
          ->check(CLI::NonNegativeNumber);
      sub.add_option("--distributed", args->distributed,
                     "data-parallel over ranks: mpi (start under mpirun -np "
                     "N), nccl (GPUs: with --nproc N, or under mpirun) or "
                     "local (one rank); -b is then the batch of a step over "
                     "all ranks")
          ->check(CLI::IsMember({"mpi", "nccl", "local"}));
      CLI::Option* nproc_opt =
          sub.add_option("--nproc", args->nproc,
                         "with --distributed nccl: start N ranks on this "
                         "host, one per GPU")
              ->check(CLI::Range(1, 1024));
      sub.add_option("--data", args->data_dir,
                     "folder with Fashion-MNIST's IDX files")
          ->capture_default_str();
      return [=] {
        args->lr_given = lr->count() > 0;
        args->epochs_given = epochs->count() > 0;
        args->nproc = nproc_opt->count() > 0 ? args->nproc : 0;
        return train_rank(*args);
      };
    });
