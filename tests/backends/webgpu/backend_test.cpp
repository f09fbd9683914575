// WebGPU-backend behaviour the conformance suite does not reach: the device
// name, dtypes it refuses, the ops not done yet, laziness and batching,
// the buffer pool (nothing leaks, trim empties it), arange (whose cases use
// only i64 and f64), reading as doubles.
#include <cmath>

#include <gtest/gtest.h>

#include "nascent/backends/device.h"
#include "nascent/core/ops.h"
#include "not_yet.h"
#include "webgpu_test.h"

namespace nascent::webgpu {
namespace {

#define NEED_ADAPTER()                                                  \
  Backend* gpu_ptr = testing::shared_backend();                         \
  if (gpu_ptr == nullptr) GTEST_SKIP() << testing::no_adapter_reason(); \
  Backend& gpu = *gpu_ptr

TEST(WebGpuBackend, MakeBackendAndDeviceNames) {
  std::vector<std::string> names = device_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "webgpu"), names.end());
  NEED_ADAPTER();
  std::unique_ptr<nascent::Backend> b = make_backend("webgpu");
  EXPECT_EQ(b->name().rfind("webgpu:", 0), 0u) << b->name();
  EXPECT_FALSE(gpu.adapter().name.empty());
  EXPECT_GT(gpu.adapter().max_storage_binding, 0u);
}

TEST(WebGpuBackend, F64IsADTypeErrorNamingOpAndAdapter) {
  NEED_ADAPTER();
  Tensor x = Tensor::empty({4}, DType::f64, gpu);
  try {
    gpu.create(CreationOp::fill, Scalar(1.0), Scalar(0), x);
    FAIL() << "fill of f64 did not throw";
  } catch (const DTypeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("fill"), std::string::npos) << m;
    EXPECT_NE(m.find("f64"), std::string::npos) << m;
    EXPECT_NE(m.find(gpu.adapter().name), std::string::npos) << m;
  }
}

// Reading a tensor as doubles casts it to f64 on the device: the one
// conversion into f64 the backend does, exact from every 32-bit type
// (subnormals, infinities, NaN, -0 and the integer extremes included).
TEST(WebGpuBackend, ReadingAsDoublesIsExact) {
  NEED_ADAPTER();
  const std::vector<float> f = {
      0.0f,   -0.0f, 1.0f,   -1.5f,    3.1415927f, 1e-40f,     -1e-45f,
      1e-38f, 3e38f, -3e38f, INFINITY, -INFINITY,  123456.789f};
  const std::vector<double> got = from_vector(f, gpu).to_vector<double>();
  ASSERT_EQ(got.size(), f.size());
  for (size_t i = 0; i < f.size(); ++i) {
    EXPECT_EQ(got[i], double(f[i])) << "f32 " << f[i];
    EXPECT_EQ(std::signbit(got[i]), std::signbit(f[i])) << "f32 " << f[i];
  }
  EXPECT_TRUE(std::isnan(
      from_vector(std::vector<float>{NAN}, gpu).to_vector<double>()[0]));
  const std::vector<int32_t> n = {
      0, 1, -1, 7, -123456789, 2147483647, -2147483647 - 1};
  const std::vector<double> gn = from_vector(n, gpu).to_vector<double>();
  for (size_t i = 0; i < n.size(); ++i) {
    EXPECT_EQ(gn[i], double(n[i])) << "i32 " << n[i];
  }
  const std::vector<uint8_t> u = {0, 1, 200, 255};
  const std::vector<double> gu = from_vector(u, gpu).to_vector<double>();
  for (size_t i = 0; i < u.size(); ++i) EXPECT_EQ(gu[i], double(u[i]));
  EXPECT_EQ(full({}, 2.5, gpu).item<double>(), 2.5);
}

// Every op of not_yet() raises BackendError naming it and the backend on
// the bare backend (f32 inputs of fitting shapes), so the conformance
// suite's list of skipped ops cannot go stale silently.
TEST(WebGpuBackend, OpsNotDoneYetRaiseBackendError) {
  NEED_ADAPTER();
  Tensor x = full({2, 3, 4, 4}, 1.0, gpu);
  Tensor m = full({4, 4}, 1.0, gpu);
  Tensor out = Tensor::empty({2, 3, 4, 4}, DType::f32, gpu);
  Tensor idx = Tensor::empty({4}, DType::i64, gpu);
  int checked = 0, tried = 0;
  for (Op op : testing::not_yet()) {
    const std::string op_name = name(op);
    SCOPED_TRACE(op_name);
    ++tried;
    try {
      switch (info(op).family) {
        case OpFamily::Unary:
          gpu.unary(UnaryOp(int(op) - int(Op::neg)), x, {}, out);
          break;
        case OpFamily::Binary:
          gpu.binary(BinaryOp(int(op) - int(Op::add)), x, x, out);
          break;
        case OpFamily::Random:
          gpu.random(RandomOp(int(op) - int(Op::uniform)), {}, out);
          break;
        case OpFamily::Scan:
          gpu.scan(ScanOp::cumsum, x, 0, out);
          break;
        case OpFamily::Conv:
          gpu.conv2d(ConvOp(int(op) - int(Op::conv2d)), x, x, nullptr, {}, out);
          break;
        case OpFamily::Pool:
          gpu.pool2d(PoolOp(int(op) - int(Op::max_pool2d)), x, nullptr, {}, out,
                     nullptr);
          break;
        case OpFamily::Index:
          gpu.index(IndexOp(int(op) - int(Op::gather)), m, 0, idx, nullptr,
                    out);
          break;
        case OpFamily::Quant: {
          QuantArg a{QuantType::q8_0, &m, &out};
          gpu.quant(QuantOp(int(op) - int(Op::qmatmul)), &m,
                    std::span<const QuantArg>(&a, 1));
          break;
        }
        default:
          // Composed in core from the ops above: they fail through them.
          --tried;
          continue;
      }
      ADD_FAILURE() << op_name << " did not throw";
    } catch (const BackendError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(op_name), std::string::npos) << msg;
      EXPECT_NE(msg.find("webgpu backend"), std::string::npos) << msg;
      ++checked;
    }
  }
  EXPECT_EQ(checked, tried);
  EXPECT_GT(checked, 0);
}

TEST(WebGpuBackend, ArangeMatchesTheCpu) {
  NEED_ADAPTER();
  cpu::Backend cpu;
  for (DType dt : {DType::f32, DType::i32, DType::u8}) {
    for (auto [a, b] : {std::pair<Scalar, Scalar>{Scalar(3), Scalar(2)},
                        {Scalar(-1.5), Scalar(0.1)},
                        {Scalar(250), Scalar(1)}}) {
      Tensor g = Tensor::empty({40}, dt, gpu);
      Tensor c = Tensor::empty({40}, dt, cpu);
      gpu.create(CreationOp::arange, a, b, g);
      cpu.create(CreationOp::arange, a, b, c);
      if (dt == DType::f32) {
        EXPECT_EQ(g.to_vector<float>(), c.to_vector<float>());
      } else {
        EXPECT_EQ(g.to_vector<int32_t>(), c.to_vector<int32_t>()) << name(dt);
      }
    }
  }
}

// Counter-based random numbers: element i depends only on (seed, offset +
// i), so the GPU's must be the CPU's (uniform and bernoulli bit for bit,
// normal within the adapter's log/sin/cos error).
TEST(WebGpuBackend, RandomMatchesTheCpu) {
  NEED_ADAPTER();
  cpu::Backend cpu;
  for (uint64_t offset : {uint64_t(0), uint64_t(4) << 33}) {
    RandomParams p{.seed = 0x9e3779b97f4a7c15ull, .offset = offset};
    for (RandomOp op :
         {RandomOp::uniform, RandomOp::normal, RandomOp::bernoulli}) {
      p.a = op == RandomOp::bernoulli ? 0.3 : -1.0;
      p.b = op == RandomOp::bernoulli ? 0.0 : 3.0;
      Tensor g = Tensor::empty({4099}, DType::f32, gpu);
      Tensor c = Tensor::empty({4099}, DType::f32, cpu);
      gpu.random(op, p, g);
      cpu.random(op, p, c);
      const std::vector<float> a = g.to_vector<float>();
      const std::vector<float> b = c.to_vector<float>();
      int bad = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        const bool ok =
            op == RandomOp::normal
                ? std::fabs(a[i] - b[i]) <= 2e-5f * (1 + std::fabs(b[i]))
                : a[i] == b[i];
        if (!ok && ++bad <= 3) {
          ADD_FAILURE() << name(op) << " element " << i << ": " << a[i]
                        << " on webgpu, " << b[i] << " on cpu";
        }
      }
      EXPECT_EQ(bad, 0) << name(op) << " offset " << offset;
    }
  }
}

TEST(WebGpuBackend, OpsAreRecordedUntilARead) {
  NEED_ADAPTER();
  gpu.synchronize();
  const int64_t before = gpu.dispatches();
  Tensor x = full({64}, 2.0, gpu);
  Tensor y = x;
  for (int i = 0; i < 10; ++i) y = y + x;
  EXPECT_GE(gpu.dispatches() - before, 11);
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(64, 22.0f));
}

TEST(WebGpuBackend, LongSumsAndManyDispatches) {
  NEED_ADAPTER();
  Tensor ones = full({1 << 23}, 1.0, gpu);
  EXPECT_EQ(sum(ones).item<float>(), float(1 << 23));
  // More dispatches than one encoder takes before it is submitted.
  Tensor y = full({8}, 0.0, gpu);
  for (int i = 0; i < Backend::kMaxDispatches + 10; ++i) y = y + 1.0;
  EXPECT_EQ(y.to_vector<float>(),
            std::vector<float>(8, float(Backend::kMaxDispatches + 10)));
}

TEST(WebGpuBackend, MemoryIsFlatOverRepeatedOpsAndTrimEmptiesThePool) {
  NEED_ADAPTER();
  gpu.trim();
  const MemoryStats start = gpu.memory_stats();
  Tensor w = full({32, 32}, 0.5, gpu);
  gpu.set_persistent(w, true);
  EXPECT_TRUE(gpu.is_persistent(w));
  size_t after_first = 0, cached_first = 0;
  for (int step = 0; step < 20; ++step) {
    {
      Tensor x = full({16, 32}, 1.0, gpu);
      Tensor h = relu(matmul(x, w));
      Tensor loss = mean(softmax(h, -1) * h);
      (void)loss.item<float>();
    }
    if (step == 0) {
      after_first = gpu.memory_stats().allocated_bytes;
      cached_first = gpu.memory_stats().cached_bytes;
    }
  }
  // The pool serves every later step: nothing more held, nothing more made.
  const MemoryStats s = gpu.memory_stats();
  EXPECT_EQ(s.allocated_bytes, after_first);
  EXPECT_EQ(s.cached_bytes, cached_first);
  EXPECT_EQ(s.persistent_bytes - start.persistent_bytes, 4096u);
  gpu.set_persistent(w, false);
  w = Tensor();
  EXPECT_EQ(gpu.memory_stats().allocated_bytes, start.allocated_bytes);
  EXPECT_GT(gpu.memory_stats().cached_bytes, 0u);
  gpu.trim();
  EXPECT_EQ(gpu.memory_stats().cached_bytes, 0u);
  EXPECT_EQ(gpu.memory_stats().persistent_bytes, start.persistent_bytes);
}

TEST(WebGpuBackend, U8WritesIntoStridedViewsKeepTheOtherBytes) {
  NEED_ADAPTER();
  // Every other byte of a u8 buffer: neighbours in a word belong to other
  // elements and must survive.
  Tensor base = full({16}, 7, gpu, DType::u8);
  Tensor view = base.slice(0, 1, 16, 2);
  Tensor src = full({8}, 200, gpu, DType::i32);
  gpu.copy(src, view);
  std::vector<uint8_t> v = base.to_vector<uint8_t>();
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(v[i], i % 2 ? 200 : 7) << i;
  }
}

}  // namespace
}  // namespace nascent::webgpu
