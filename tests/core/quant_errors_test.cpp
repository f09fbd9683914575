// Validation of qmatmul (one weight or several), qembedding, dequantize and
// quantize: each error has its type and a message naming the op, the shapes
// and the weight type; and a backend without the quant family says so
// instead of failing silently.
#include <string>

#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"

namespace nascent {
namespace {

template <class E, class Fn>
void expect_error(Fn fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "did not throw; expected a message with "
                  << *parts.begin();
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(msg.find(part), std::string::npos)
          << "message \"" << msg << "\" lacks \"" << part << "\"";
    }
  }
}

class QuantErrors : public ::testing::Test {
 protected:
  Tensor make(const Shape& shape, DType dtype = DType::f32) {
    return zeros(shape, cpu_, dtype);
  }
  cpu::Backend cpu_;
};

TEST_F(QuantErrors, QmatmulShapes) {
  const Tensor w = make({3, 36}, DType::u8);  // 3 rows of 64 q4_0 values.
  expect_error<ShapeError>(
      [&] {
        qmatmul(make({2, 48}), w, QuantType::q4_0);
      },
      {"qmatmul", "f32[2, 48]", "u8[3, 36] (q4_0)", "48", "32"});
  expect_error<ShapeError>(
      [&] {
        qmatmul(make({2, 32}), w, QuantType::q4_0);
      },
      {"qmatmul", "f32[2, 32]", "u8[3, 36] (q4_0)", "18 bytes", "36"});
  expect_error<ShapeError>(
      [&] {
        qmatmul(make({2, 64}), make({2, 3, 36}, DType::u8), QuantType::q4_0);
      },
      {"qmatmul", "f32[2, 64]", "u8[2, 3, 36] (q4_0)"});
  expect_error<ShapeError>([&] { qmatmul(make({}), w, QuantType::q4_0); },
                           {"qmatmul", "f32[]", "u8[3, 36] (q4_0)"});
  expect_error<ShapeError>(
      [&] {
        qmatmul(make({1, 300}), make({4, 144}, DType::u8), QuantType::q4_k);
      },
      {"qmatmul", "K = 300", "q4_K", "256"});
}

TEST_F(QuantErrors, QmatmulDtypes) {
  expect_error<DTypeError>(
      [&] {
        qmatmul(make({2, 64}), make({3, 36}), QuantType::q4_0);
      },
      {"qmatmul", "u8", "f32[3, 36]", "q4_0"});
  expect_error<DTypeError>(
      [&] {
        qmatmul(make({2, 64}, DType::i32), make({3, 36}, DType::u8),
                QuantType::q4_0);
      },
      {"qmatmul", "i32[2, 64]", "u8[3, 36] (q4_0)"});
}

TEST_F(QuantErrors, BackendsMustMatch) {
  cpu::Backend other;
  const Tensor w = zeros({3, 36}, other, DType::u8);
  expect_error<BackendError>(
      [&] {
        qmatmul(make({2, 64}), w, QuantType::q4_0);
      },
      {"qmatmul", "different backends"});
}

TEST_F(QuantErrors, DequantizeAndQuantize) {
  expect_error<ShapeError>(
      [&] {
        dequantize(make({3, 35}, DType::u8), QuantType::q4_0);
      },
      {"dequantize", "u8[3, 35] (q4_0)", "35", "18"});
  expect_error<DTypeError>(
      [&] {
        dequantize(make({3, 36}, DType::i64), QuantType::q4_0);
      },
      {"dequantize", "u8", "i64[3, 36]"});
  expect_error<ShapeError>(
      [&] {
        quantize(make({2, 100}), QuantType::q8_0);
      },
      {"quantize", "f32[2, 100]", "q8_0", "32"});
  expect_error<DTypeError>(
      [&] {
        quantize(make({2, 64}, DType::i32), QuantType::q8_0);
      },
      {"quantize", "i32[2, 64]"});
}

TEST_F(QuantErrors, QembeddingIds) {
  const Tensor w = make({11, 18}, DType::u8);  // 11 rows of 32 q4_0 values.
  auto ids = [&](const std::vector<int64_t>& v, DType dt) {
    return from_vector(v, cpu_).cast(dt);
  };
  expect_error<ValueError>(
      [&] {
        qembedding(w, ids({3, 0, 11, 2}, DType::i32), QuantType::q4_0);
      },
      {"qembedding", "index 11", "flat position 2", "i32[4]", "[0, 11)",
       "u8[11, 18]"});
  expect_error<ValueError>(
      [&] {
        qembedding(w, ids({4, -1}, DType::i64), QuantType::q4_0);
      },
      {"qembedding", "index -1", "i64[2]", "[0, 11)"});
  expect_error<ValueError>(
      [&] {
        qembedding(w, ids({1, 2, 3, 99}, DType::i64).reshape({2, 2}),
                   QuantType::q4_0);
      },
      {"qembedding", "index 99", "i64[2, 2]"});
  for (DType dt : {DType::f32, DType::u8, DType::boolean}) {
    const Tensor bad = make({3}, dt);
    expect_error<DTypeError>(
        [&] { qembedding(w, bad, QuantType::q4_0); },
        {"qembedding", "ids of i64 or i32", bad.to_string()});
  }
}

TEST_F(QuantErrors, QembeddingWeights) {
  const Tensor ids = make({2}, DType::i64);
  expect_error<DTypeError>(
      [&] {
        qembedding(make({11, 18}), ids, QuantType::q4_0);
      },
      {"qembedding", "raw bytes (u8)", "f32[11, 18]", "q4_0"});
  expect_error<ShapeError>(
      [&] {
        qembedding(make({2, 11, 18}, DType::u8), ids, QuantType::q4_0);
      },
      {"qembedding", "[N, bytes per row]", "u8[2, 11, 18] (q4_0)", "i64[2]"});
  expect_error<ShapeError>(
      [&] { qembedding(make({198}, DType::u8), ids, QuantType::q4_0); },
      {"qembedding", "u8[198] (q4_0)"});
  expect_error<ShapeError>(
      [&] {
        qembedding(make({11, 35}, DType::u8), ids, QuantType::q4_0);
      },
      {"qembedding", "u8[11, 35] (q4_0)", "35 bytes", "18-byte"});
  expect_error<ShapeError>(
      [&] {
        qembedding(make({11, 200}, DType::u8), ids, QuantType::q6_k);
      },
      {"qembedding", "u8[11, 200] (q6_K)", "210-byte"});
  cpu::Backend other;
  expect_error<BackendError>(
      [&] {
        qembedding(make({11, 18}, DType::u8), zeros({2}, other, DType::i64),
                   QuantType::q4_0);
      },
      {"qembedding", "different backends"});
}

TEST_F(QuantErrors, GroupedQmatmul) {
  const Tensor x = make({2, 256});
  expect_error<ValueError>([&] { qmatmul(x, std::span<const QuantWeight>()); },
                           {"qmatmul", "no weights", "f32[2, 256]"});
  // q4_K and f16 fit K = 256; the q8_0 weight in the middle holds rows of
  // 288 values (9 blocks of 34 bytes) and is the one named.
  const std::vector<QuantWeight> ws = {
      {make({4, 144}, DType::u8), QuantType::q4_k},
      {make({3, 306}, DType::u8), QuantType::q8_0},
      {make({5, 512}, DType::u8), QuantType::f16}};
  expect_error<ShapeError>(
      [&] { qmatmul(x, ws); },
      {"qmatmul", "f32[2, 256]", "u8[3, 306] (q8_0)", "272 bytes", "306"});
  // A weight whose type's block size does not divide K (q4_K's 256 for
  // K = 64, though q4_0 fits).
  const std::vector<QuantWeight> odd = {
      {make({4, 144}, DType::u8), QuantType::q4_k},
      {make({2, 36}, DType::u8), QuantType::q4_0}};
  expect_error<ShapeError>(
      [&] {
        qmatmul(make({2, 64}), odd);
      },
      {"qmatmul", "f32[2, 64]", "u8[4, 144] (q4_K)", "K = 64", "256"});
  cpu::Backend other;
  const std::vector<QuantWeight> elsewhere = {
      {make({4, 144}, DType::u8), QuantType::q4_k},
      {zeros({3, 272}, other, DType::u8), QuantType::q8_0}};
  expect_error<BackendError>([&] { qmatmul(x, elsewhere); },
                             {"qmatmul", "different backends", "u8[3, 272]"});
  // The valid list runs.
  const std::vector<QuantWeight> fine = {
      {make({4, 144}, DType::u8), QuantType::q4_k},
      {make({3, 272}, DType::u8), QuantType::q8_0}};
  const std::vector<Tensor> outs = qmatmul(x, fine);
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[1].shape(), (Shape{2, 3}));
}

TEST_F(QuantErrors, EmptyOperands) {
  const Tensor y =
      qmatmul(make({0, 64}), make({3, 36}, DType::u8), QuantType::q4_0);
  EXPECT_EQ(y.shape(), (Shape{0, 3}));
  const Tensor z =
      qmatmul(make({2, 0}), make({3, 0}, DType::u8), QuantType::q8_0);
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(dequantize(make({0, 36}, DType::u8), QuantType::q4_0).shape(),
            (Shape{0, 64}));
}

// A backend that forwards everything to the CPU except the quant family,
// as a backend written before it would: the op must name itself and the
// backend.
class NoQuantBackend final : public Backend {
 public:
  std::string name() const override { return "noquant"; }
  std::shared_ptr<BackendData> allocate(size_t n) override {
    return cpu_.allocate(n);
  }
  std::shared_ptr<BackendData> upload(const void* h, size_t n) override {
    return cpu_.upload(h, n);
  }
  HostBytes materialize(const Tensor& t) override {
    return cpu_.materialize(t);
  }
  void set_persistent(const Tensor&, bool) override {}
  bool is_persistent(const Tensor&) const override { return false; }
  void trim() override {}
  MemoryStats memory_stats() const override { return cpu_.memory_stats(); }
  void create(CreationOp op, Scalar a, Scalar b, Tensor& out) override {
    cpu_.create(op, a, b, out);
  }
  void random(RandomOp, const RandomParams&, Tensor&) override {}
  void copy(const Tensor& src, Tensor& dst) override { cpu_.copy(src, dst); }
  void unary(UnaryOp, const Tensor&, const UnaryParams&, Tensor&) override {}
  void binary(BinaryOp, const Tensor&, const Tensor&, Tensor&) override {}
  void where(const Tensor&, const Tensor&, const Tensor&, Tensor&) override {}
  void reduce(ReduceOp, const Tensor&, const std::vector<int>&,
              const ReduceParams&, Tensor&) override {}
  void scan(ScanOp, const Tensor&, int, Tensor&) override {}
  void matmul(const Tensor&, const Tensor&, Tensor&) override {}
  void conv2d(ConvOp, const Tensor&, const Tensor&, const Tensor*,
              const Conv2dParams&, Tensor&) override {}
  void pool2d(PoolOp, const Tensor&, const Tensor*, const Pool2dParams&,
              Tensor&, Tensor*) override {}
  void softmax(SoftmaxOp, const Tensor&, int, Tensor&) override {}
  void norm(NormOp, const Tensor&, const Tensor*, const Tensor*, double,
            Tensor&, Tensor*, Tensor*) override {}
  void index(IndexOp, const Tensor&, int, const Tensor&, const Tensor*,
             Tensor&) override {}

 private:
  cpu::Backend cpu_;
};

TEST(QuantDefault, BackendWithoutTheFamilyThrows) {
  NoQuantBackend backend;
  const Tensor x = zeros({2, 64}, backend);
  const Tensor w = zeros({3, 36}, backend, DType::u8);
  expect_error<BackendError>([&] { qmatmul(x, w, QuantType::q4_0); },
                             {"qmatmul", "not implemented", "noquant"});
  expect_error<BackendError>([&] { dequantize(w, QuantType::q4_0); },
                             {"dequantize", "not implemented", "noquant"});
}

}  // namespace
}  // namespace nascent
