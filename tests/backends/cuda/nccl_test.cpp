// NCCL's communicator (backends/cuda/nccl.h). Loading libnccl and making a
// clique id need no GPU, so those run in CI; the collectives run on the
// device machine, on one GPU (a clique of one rank: NCCL refuses two ranks
// on one device), and DataParallel over it trains exactly as one process.
#include <gtest/gtest.h>

#include "backends/cuda/need_gpu.h"
#include "dist/model_steps.h"
#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cuda/nccl.h"
#include "nascent/backends/device.h"
#include "nascent/optim/optimizer.h"

namespace nascent::cuda {
namespace {

TEST(Nccl, LibraryLoadsWithEveryEntryPoint) {
  ASSERT_TRUE(has_nccl()) << "this build found no nccl.h";
  NcclLibrary lib;
  try {
    lib = load_nccl_library();
  } catch (const BackendError& e) {
    FAIL() << e.what();
  }
  EXPECT_FALSE(lib.path.empty());
  EXPECT_EQ(lib.entry_points, 10);
  // The library is the major version (2.x) the header describes.
  EXPECT_EQ(lib.version / 10000, lib.header_version / 10000)
      << lib.version << " from " << lib.path;
}

TEST(Nccl, CliqueIdsAreFreshHex) {
  const std::string a = nccl_unique_id(), b = nccl_unique_id();
  EXPECT_EQ(a.size(), 256u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
}

TEST(Nccl, RefusesBadIdsAndRanksWithoutAGpu) {
  // Checked before NCCL or the device is touched.
  if (Backend::device_count() > 0) {
    Backend gpu(0);
    EXPECT_THROW(make_nccl_communicator(gpu, 0, 1, "xyz"), ValueError);
    EXPECT_THROW(make_nccl_communicator(gpu, 1, 1, nccl_unique_id()),
                 ValueError);
  }
}

TEST(Nccl, OneRankCollectivesOnTheGpu) {
  NASCENT_NEED_GPU();
  Backend gpu(0);
  std::unique_ptr<dist::Communicator> c =
      make_nccl_communicator(gpu, 0, 1, nccl_unique_id());
  EXPECT_EQ(c->name(), "nccl");
  EXPECT_EQ(c->world_size(), 1);
  Tensor x = randn({5, 7}, gpu, 3).transpose();  // Strided.
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    Tensor v = x.cast(dt);
    for (dist::Reduction op : {dist::Reduction::sum, dist::Reduction::mean}) {
      Tensor y = c->all_reduce(v, op);
      EXPECT_EQ(y.dtype(), dt);
      EXPECT_EQ(y.to_vector<float>(), v.to_vector<float>()) << name(dt);
    }
  }
  Tensor i = arange(10, gpu, DType::i32);
  EXPECT_EQ(c->all_reduce(i).to_vector<int32_t>(), i.to_vector<int32_t>());
  EXPECT_EQ(c->broadcast(x).to_vector<float>(), x.to_vector<float>());
  Tensor all = c->all_gather(x);
  EXPECT_EQ(all.shape(), (Shape{1, 7, 5}));
  EXPECT_EQ(all.select(0, 0).to_vector<float>(), x.to_vector<float>());
  c->barrier();
  // A tensor elsewhere is refused, naming where it lives.
  cpu::Backend cpu;
  try {
    c->all_reduce(ones({3}, cpu));
    FAIL() << "a CPU tensor was accepted";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("lives on cpu"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(c->all_reduce(x.cast(DType::f64)), DTypeError);
}

TEST(Nccl, DataParallelOverOneGpuTrainsAsOneProcess) {
  NASCENT_NEED_GPU();
  Backend gpu(0);
  std::unique_ptr<dist::Communicator> c = make_communicator("nccl", gpu);
  autodiff::Backend ad(gpu);
  auto a = testing::small_model(ad, 1), b = testing::small_model(ad, 1);
  optim::SGD sa(a->named_parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::SGD sb(b->named_parameters(), {.lr = 0.1, .momentum = 0.9});
  dist::DataParallel ddp(*c, *b, sb, {.bucket_bytes = 16});
  for (int step = 0; step < 4; ++step) {
    auto [x, y] = testing::step_batch(ad, step, 9);
    testing::plain_step(*a, sa, x, y);
    testing::parallel_step(*b, ddp, x, y);
  }
  EXPECT_EQ(testing::max_difference(*a, *b), 0.0);
}

}  // namespace
}  // namespace nascent::cuda
