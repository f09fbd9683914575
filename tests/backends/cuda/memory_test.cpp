// The CUDA backend's memory: RAII frees, the releaser trio, statistics, the
// caching allocator's reuse and trim, out-of-memory errors, and a leak test
// over 2,000 steps of a small training-like loop. Tests that need a GPU say
// so and skip without one; the device-free checks run everywhere.
#include <cmath>

#include <gtest/gtest.h>

#include "backends/cuda/need_gpu.h"
#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cuda/backend.h"
#include "nascent/core/ops.h"

namespace nascent::cuda {
namespace {

TEST(CudaBackend, MissingDeviceIsABackendErrorNamingIt) {
  // Runs without a GPU too: asking for a device past the last one fails
  // with a clear message, never a crash.
  const int n = Backend::device_count();
  EXPECT_GE(n, 0);
  try {
    Backend gpu(n + 7);
    FAIL() << "expected BackendError";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("device " + std::to_string(n + 7)),
              std::string::npos)
        << e.what();
  }
}

TEST(CudaMemory, RaiiReturnsBlocksToTheCacheAndTrimToTheDriver) {
  NASCENT_NEED_GPU();
  Backend gpu(0);
  EXPECT_EQ(gpu.memory_stats().allocated_bytes, 0u);
  {
    Tensor a = zeros({1024}, gpu);
    Tensor view = a.slice(0, 0, 10);  // Shares the storage.
    EXPECT_EQ(gpu.memory_stats().allocated_bytes, 4096u);
    gpu.set_persistent(view, true);
    EXPECT_TRUE(gpu.is_persistent(a));
    EXPECT_EQ(gpu.memory_stats().persistent_bytes, 4096u);
    gpu.release(a);
    EXPECT_FALSE(a.defined());
    EXPECT_EQ(gpu.memory_stats().allocated_bytes, 4096u);  // view holds it.
  }
  MemoryStats s = gpu.memory_stats();
  EXPECT_EQ(s.allocated_bytes, 0u);
  EXPECT_EQ(s.persistent_bytes, 0u);
  EXPECT_EQ(s.peak_bytes, 4096u);
  EXPECT_GT(s.cached_bytes, 0u);  // The segment stays for reuse.
  gpu.trim();
  EXPECT_EQ(gpu.memory_stats().cached_bytes, 0u);
}

TEST(CudaMemory, FreedBlocksAreReusedWithoutGrowing) {
  NASCENT_NEED_GPU();
  Backend gpu(0);
  for (int64_t n : {int64_t(100), int64_t(300000), int64_t(5000000)}) {
    { Tensor t = ones({n}, gpu); }
    const size_t cached = gpu.memory_stats().cached_bytes;
    for (int i = 0; i < 50; ++i) {
      Tensor t = ones({n}, gpu);
      Tensor u = t * 2.0f;
      EXPECT_EQ(u.numel(), n);
    }
    // Two tensors live at a time: at most one more block was needed.
    EXPECT_LE(gpu.memory_stats().cached_bytes,
              cached + 2 * size_t(n) * 4 + (size_t(20) << 20));
  }
}

TEST(CudaMemory, OutOfMemoryStatesRequestedAndFreeBytes) {
  NASCENT_NEED_GPU();
  Backend gpu(0);
  try {
    Tensor t = Tensor::empty({int64_t(1) << 40}, DType::f32, gpu);  // 4 TiB
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("requested 4398046511104 bytes"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("free"), std::string::npos) << msg;
  }
  // The backend still works afterwards.
  EXPECT_EQ(full({3}, 2.0f, gpu).to_vector<float>(),
            (std::vector<float>{2, 2, 2}));
}

TEST(CudaMemory, MaterializeReadsViewsAndLargeUploads) {
  NASCENT_NEED_GPU();
  Backend gpu(0);
  std::vector<float> v(100000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i) * 0.5f;
  Tensor t = from_vector(v, gpu);  // Large upload (cudaMemcpyAsync).
  EXPECT_EQ(t.to_vector<float>(), v);
  Tensor small = from_vector(std::vector<int64_t>{1, -2, 3}, gpu);  // Inline.
  EXPECT_EQ(small.to_vector<int64_t>(), (std::vector<int64_t>{1, -2, 3}));
  Tensor view = t.slice(0, 1000, 1010, 3);
  EXPECT_EQ(view.to_vector<float>(),
            (std::vector<float>{500.0f, 501.5f, 503.0f, 504.5f}));
  // Round trip through the CPU backend.
  cpu::Backend host;
  Tensor back = t.to(host).to(gpu);
  EXPECT_EQ(&back.backend(), &gpu);
  EXPECT_EQ(back.to_vector<float>(), v);
}

TEST(CudaMemory, TensorsOutliveTheirBackend) {
  NASCENT_NEED_GPU();
  Tensor t;
  {
    Backend gpu(0);
    t = arange(int64_t(5), gpu, DType::i64);
    (void)t.data();
  }
  // The context stays alive with the storage; freeing it later is safe.
  t = Tensor();
  SUCCEED();
}

// 2,000 steps of a small MLP's forward pass, loss and an SGD-like update
// with fresh parameter tensors each step: after the first steps the
// allocator serves every request from its cache, so the live bytes at step
// 100 and step 2,000 are equal, and after the loop only the parameters are
// left; trim() then returns every cached block.
TEST(CudaMemory, TrainingLoopDoesNotLeak) {
  NASCENT_NEED_GPU();
  Backend gpu(0);
  Generator gen(1);
  Tensor w1 = normal({64, 128}, 0.0, 0.1, gpu, gen);
  Tensor b1 = zeros({128}, gpu);
  Tensor w2 = normal({128, 10}, 0.0, 0.1, gpu, gen);
  for (Tensor* p : {&w1, &b1, &w2}) gpu.set_persistent(*p, true);
  std::vector<int64_t> ids(32);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t(i % 10);
  Tensor labels = one_hot(from_vector(ids, gpu), 10, DType::f32);
  size_t at_100 = 0, at_2000 = 0;
  float last_loss = 0;
  for (int step = 1; step <= 2000; ++step) {
    Tensor x = normal({32, 64}, 0.0, 1.0, gpu, gen);
    Tensor h = relu(matmul(x, w1) + b1);
    Tensor logits = matmul(h, w2);
    Tensor p = softmax(logits, -1);
    Tensor loss = mean(sum(-log_softmax(logits, -1) * labels, {1}));
    // Gradients of the last layer by hand; the first layer decays.
    Tensor g2 = matmul(h.transpose(0, 1), (p - labels) / 32.0f);
    Tensor nw2 = w2 - g2 * 0.1f;
    Tensor nw1 = w1 * 0.9999f;
    gpu.set_persistent(nw2, true);
    gpu.set_persistent(nw1, true);
    w2 = nw2;
    w1 = nw1;
    if (step == 2000) last_loss = loss.item<float>();
    if (step == 100) at_100 = gpu.memory_stats().allocated_bytes;
    if (step == 2000) at_2000 = gpu.memory_stats().allocated_bytes;
  }
  EXPECT_EQ(at_100, at_2000);
  EXPECT_TRUE(std::isfinite(last_loss));  // The loop did real work.
  const size_t params = (64 * 128 + 128 + 128 * 10) * sizeof(float);
  MemoryStats s = gpu.memory_stats();
  EXPECT_EQ(s.allocated_bytes, params + 32 * 10 * sizeof(float));
  EXPECT_EQ(s.persistent_bytes, params);
  labels = Tensor();
  w1 = Tensor();
  b1 = Tensor();
  w2 = Tensor();
  gpu.trim();
  s = gpu.memory_stats();
  EXPECT_EQ(s.allocated_bytes, 0u);
  EXPECT_EQ(s.persistent_bytes, 0u);
  EXPECT_EQ(s.cached_bytes, 0u);
}

}  // namespace
}  // namespace nascent::cuda
