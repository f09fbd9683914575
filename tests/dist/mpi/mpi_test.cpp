// The MPI communicator and DataParallel over the ranks of one mpirun
// (ctest starts this program with `mpirun -np 2`): every rank runs every
// test, in the same order, and checks its own results against a reference
// it computes alone.
#include <gtest/gtest.h>

#include <cmath>

#include "dist/model_steps.h"
#include "nascent/backends/cpu/backend.h"
#include "nascent/dist/mpi.h"
#include "nascent/optim/optimizer.h"

namespace nascent {
namespace {

dist::Communicator& comm() {
  static std::unique_ptr<dist::Communicator> c = dist::make_mpi_communicator();
  return *c;
}

// Rank r's value i: distinct per rank, of both signs, exact in bf16.
double value(int r, int64_t i) {
  return double((i * 7 + r * 13) % 41 - 20) * 0.25 + double(r);
}

TEST(Mpi, SeesEveryRank) {
  EXPECT_EQ(comm().name(), "mpi");
  ASSERT_GE(comm().world_size(), 2) << "run under mpirun -np 2 or more";
  EXPECT_LT(comm().rank(), comm().world_size());
}

TEST(Mpi, AllReduceMatchesALocalSumForEveryDtypeAndSize) {
  cpu::Backend cpu;
  const int world = comm().world_size(), me = comm().rank();
  for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::i32}) {
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(1000), int64_t(65537)}) {
      std::vector<double> mine(static_cast<size_t>(n)),
          sum(static_cast<size_t>(n), 0.0);
      for (int64_t i = 0; i < n; ++i) {
        mine[size_t(i)] =
            dt == DType::i32 ? std::floor(value(me, i)) : value(me, i);
        for (int r = 0; r < world; ++r) {
          sum[size_t(i)] +=
              dt == DType::i32 ? std::floor(value(r, i)) : value(r, i);
        }
      }
      Tensor x = from_vector(mine, cpu).cast(dt);
      std::vector<dist::Reduction> ops = {dist::Reduction::sum};
      if (dt != DType::i32) ops.push_back(dist::Reduction::mean);
      for (dist::Reduction op : ops) {
        Tensor y = comm().all_reduce(x, op);
        ASSERT_EQ(y.dtype(), dt);
        ASSERT_EQ(y.shape(), x.shape());
        std::vector<double> got = y.to_vector<double>();
        const double div = op == dist::Reduction::mean ? world : 1.0;
        const double eps = dt == DType::bf16  ? 1.0 / 128
                           : dt == DType::f16 ? 1.0 / 1024
                                              : 1e-6;
        for (int64_t i = 0; i < n; ++i) {
          const double want = sum[size_t(i)] / div;
          ASSERT_NEAR(got[size_t(i)], want, eps * (1.0 + std::abs(want)))
              << name(dt) << " n=" << n << " i=" << i;
        }
      }
    }
  }
}

TEST(Mpi, AsyncReducesCompleteInAnyWaitOrder) {
  cpu::Backend cpu;
  const int world = comm().world_size();
  std::vector<std::unique_ptr<dist::Work>> works;
  for (int k = 0; k < 5; ++k) {
    works.push_back(comm().all_reduce_async(
        full({3 + k}, double(k + comm().rank()), cpu), dist::Reduction::sum));
  }
  for (int k = 4; k >= 0; --k) {
    const double want = world * k + world * (world - 1) / 2.0;
    for (float v : works[size_t(k)]->wait().to_vector<float>()) {
      EXPECT_EQ(v, want) << k;
    }
  }
}

TEST(Mpi, BroadcastAndAllGatherCarryAnyDtypeAndStridedViews) {
  cpu::Backend cpu;
  const int world = comm().world_size(), me = comm().rank();
  Tensor base =
      arange(0, 12, 1, cpu, DType::f32).reshape({3, 4}) + double(100 * me);
  Tensor view = base.transpose();  // [4, 3], strided.
  for (int root = 0; root < world; ++root) {
    for (DType dt : {DType::f32, DType::i64, DType::u8, DType::f16}) {
      Tensor x = view.cast(dt);
      Tensor got = comm().broadcast(x, root);
      ASSERT_EQ(got.shape(), (Shape{4, 3}));
      ASSERT_EQ(got.dtype(), dt);
      Tensor want =
          (base.transpose() - double(100 * me) + double(100 * root)).cast(dt);
      EXPECT_EQ(got.to_vector<double>(), want.to_vector<double>())
          << "root " << root << " " << name(dt);
    }
  }
  Tensor all = comm().all_gather(view);
  ASSERT_EQ(all.shape(), (Shape{world, 4, 3}));
  for (int r = 0; r < world; ++r) {
    Tensor want = base.transpose() - double(100 * me) + double(100 * r);
    EXPECT_EQ(all.select(0, r).to_vector<float>(), want.to_vector<float>());
  }
  comm().barrier();
}

TEST(Mpi, BadInputIsRefusedBeforeAnyRankWaits) {
  cpu::Backend cpu;
  Tensor x = zeros({2}, cpu, DType::f64);
  EXPECT_THROW(comm().all_reduce(x), DTypeError);
  EXPECT_THROW(comm().broadcast(x, comm().world_size()), ValueError);
  EXPECT_THROW(comm().broadcast(x, -1), ValueError);
  EXPECT_THROW(comm().all_gather(Tensor()), ValueError);
  comm().barrier();  // Nothing was left half-sent.
}

TEST(Mpi, DataParallelStepsEqualOneProcessOnTheWholeBatch) {
  cpu::Backend cpu;
  autodiff::Backend ad(cpu);
  for (const char* kind : {"sgd", "adamw"}) {
    // Every rank builds its model from another seed: DataParallel starts
    // them all from rank 0's weights.
    auto one = testing::small_model(ad, 1);
    auto mine = testing::small_model(ad, 1 + uint64_t(comm().rank()));
    std::unique_ptr<optim::Optimizer> oa, ob;
    if (std::string(kind) == "sgd") {
      oa = std::make_unique<optim::SGD>(
          one->named_parameters(),
          optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
      ob = std::make_unique<optim::SGD>(
          mine->named_parameters(),
          optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
    } else {
      oa = std::make_unique<optim::Adam>(
          one->named_parameters(),
          optim::AdamOptions{.lr = 0.01, .weight_decay = 0.1}, true);
      ob = std::make_unique<optim::Adam>(
          mine->named_parameters(),
          optim::AdamOptions{.lr = 0.01, .weight_decay = 0.1}, true);
    }
    dist::DataParallel ddp(comm(), *mine, *ob, {.bucket_bytes = 64});
    EXPECT_EQ(testing::max_difference(*one, *mine), 0.0) << kind;
    // Batches that split evenly, unevenly, and leave a rank without any.
    const int64_t sizes[] = {8, 9, 5, 1, 12, 7};
    for (int step = 0; step < 6; ++step) {
      auto [x, y] = testing::step_batch(ad, step, sizes[step]);
      testing::plain_step(*one, *oa, x, y);
      testing::parallel_step(*mine, ddp, x, y);
    }
    EXPECT_LT(testing::max_difference(*one, *mine), 1e-5) << kind;
  }
}

TEST(Mpi, DataParallelRefusesRanksWithOtherModels) {
  cpu::Backend cpu;
  autodiff::Backend ad(cpu);
  // Rank 1 has a wider hidden layer: every rank sees it and throws.
  auto m = testing::small_model(ad, 1, comm().rank() == 1 ? 6 : 5);
  optim::SGD opt(m->named_parameters(), {.lr = 0.1});
  try {
    dist::DataParallel ddp(comm(), *m, opt);
    FAIL() << "different models were accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 has other parameters"),
              std::string::npos)
        << e.what();
  }
  comm().barrier();
}

}  // namespace
}  // namespace nascent
