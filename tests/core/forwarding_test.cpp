// Every op of the table goes through every wrapper to the backend it wraps:
// one small call of each op on a ForwardingBackend, on autodiff::Backend
// and on the op profiler, each over a recorder that notes the ops reaching
// it. An op a wrapper swallows (or turns into others, as a composed
// default would) fails here, and an op of the table without a call below
// fails too.
#include <functional>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "bench/op_profiler.h"
#include "nascent/autodiff/autodiff.h"
#include "nascent/backends/cpu/backend.h"
#include "nascent/core/forwarding.h"
#include "nascent/core/ops.h"

namespace nascent {
namespace {

// The ops that reach the wrapped backend.
class Recorder final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  std::set<Op> seen;

 protected:
  void before(Op op, std::span<const Tensor* const>,
              std::span<Tensor* const>) override {
    seen.insert(op);
  }
};

Tensor input(const Shape& shape, Backend& b, uint64_t seed) {
  return randn(shape, b, seed);
}

// One call of `op` on backend b.
void call(Op op, Backend& b) {
  const Tensor x = input({2, 3}, b, 1), y = input({2, 3}, b, 2);
  const Tensor mask = gt(x, 0.0);
  const OpInfo& i = info(op);
  switch (i.family) {
    case OpFamily::Unary: {
      const UnaryOp u = UnaryOp(int(op) - int(op_of(UnaryOp(0))));
      UnaryParams p{-1.0, 1.0};
      if (u == UnaryOp::pow_scalar) p.a = 2.0;
      unary(u, u == UnaryOp::logical_not ? mask : x, p);
      return;
    }
    case OpFamily::Binary: {
      const BinaryOp o = BinaryOp(int(op) - int(op_of(BinaryOp(0))));
      const bool logic = o == BinaryOp::logical_and ||
                         o == BinaryOp::logical_or ||
                         o == BinaryOp::logical_xor;
      binary(o, logic ? mask : x, logic ? lt(y, 0.0) : y);
      return;
    }
    default:
      break;
  }
  switch (op) {
    case Op::fill:
      full({2}, 1.0, b);
      return;
    case Op::arange:
      arange(0, 4, 1, b);
      return;
    case Op::uniform:
      rand({4}, b, 1);
      return;
    case Op::normal:
      randn({4}, b, 1);
      return;
    case Op::bernoulli: {
      Generator gen(1);
      bernoulli({4}, 0.5, b, gen);
      return;
    }
    case Op::copy:
      x.cast(DType::f64);
      return;
    case Op::where:
      where(mask, x, y);
      return;
    case Op::sum:
      sum(x);
      return;
    case Op::mean:
      mean(x);
      return;
    case Op::max:
      max(x);
      return;
    case Op::min:
      min(x);
      return;
    case Op::prod:
      prod(x);
      return;
    case Op::argmax:
      argmax(x, 1);
      return;
    case Op::argmin:
      argmin(x, 1);
      return;
    case Op::var:
      var(x, {1});
      return;
    case Op::logsumexp:
      logsumexp(x, {1});
      return;
    case Op::cumsum:
      cumsum(x, 1);
      return;
    case Op::matmul:
      matmul(x, y.transpose(0, 1));
      return;
    case Op::conv2d:
      conv2d(input({1, 1, 4, 4}, b, 3), input({1, 1, 3, 3}, b, 4), nullptr);
      return;
    case Op::conv2d_backward_input:
      conv2d_backward_input(input({1, 1, 2, 2}, b, 3),
                            input({1, 1, 3, 3}, b, 4), {1, 1, 4, 4});
      return;
    case Op::conv2d_backward_weight:
      conv2d_backward_weight(input({1, 1, 4, 4}, b, 3),
                             input({1, 1, 2, 2}, b, 4), {1, 1, 3, 3});
      return;
    case Op::max_pool2d:
      max_pool2d(input({1, 1, 4, 4}, b, 3), {});
      return;
    case Op::avg_pool2d:
      avg_pool2d(input({1, 1, 4, 4}, b, 3), {});
      return;
    case Op::max_pool2d_backward: {
      auto [v, idx] = max_pool2d_with_indices(input({1, 1, 4, 4}, b, 3), {});
      max_pool2d_backward(v, idx, {1, 1, 4, 4}, {});
      return;
    }
    case Op::avg_pool2d_backward:
      avg_pool2d_backward(input({1, 1, 2, 2}, b, 3), {1, 1, 4, 4}, {});
      return;
    case Op::softmax:
      softmax(x);
      return;
    case Op::log_softmax:
      log_softmax(x);
      return;
    case Op::layer_norm:
      layer_norm(x, nullptr, nullptr);
      return;
    case Op::rms_norm:
      rms_norm(x, nullptr);
      return;
    case Op::gather:
      gather(x, 1, from_vector<int64_t>({0, 2, 1, 0}, {2, 2}, b));
      return;
    case Op::scatter_add:
      scatter_add(x, 1, from_vector<int64_t>({0, 2, 1, 0}, {2, 2}, b),
                  input({2, 2}, b, 5));
      return;
    case Op::index_select:
      index_select(x, 1, from_vector<int64_t>({2, 0}, b));
      return;
    case Op::qmatmul:
    case Op::dequantize:
    case Op::qembedding:
    case Op::quantize: {
      const Tensor w = quantize(input({4, 32}, b, 6), QuantType::q8_0);
      if (op == Op::qmatmul) qmatmul(input({2, 32}, b, 7), w, QuantType::q8_0);
      if (op == Op::dequantize) dequantize(w, QuantType::q8_0);
      if (op == Op::qembedding) {
        qembedding(w, from_vector<int32_t>({3, 1}, b), QuantType::q8_0);
      }
      return;
    }
    case Op::sgd_update: {
      OptimParams p;
      p.lr = 0.1;
      sgd_update(x.clone(), y, nullptr, p);
      return;
    }
    case Op::adam_update: {
      OptimParams p;
      p.lr = 0.1;
      adam_update(x.clone(), y, zeros({2, 3}, b), zeros({2, 3}, b), p);
      return;
    }
    case Op::rope:
      rope(input({3, 2, 4}, b, 8), 5, RopeParams{});
      return;
    case Op::attention:
      scaled_dot_product_attention(
          input({1, 2, 3, 4}, b, 9), input({1, 1, 3, 4}, b, 10),
          input({1, 1, 3, 4}, b, 11), {.causal = true});
      return;
    case Op::swiglu:
      swiglu(x, y);
      return;
    case Op::geglu:
      geglu(x, y);
      return;
    default:
      ADD_FAILURE() << "op " << name(op) << " has no call in forwarding_test";
  }
}

using MakeWrapper = std::function<std::unique_ptr<Backend>(Backend& inner)>;

void check_every_op(const std::string& wrapper, const MakeWrapper& make) {
  cpu::Backend cpu;
  Recorder recorder(cpu);
  std::unique_ptr<Backend> w = make(recorder);
  for (const OpInfo& i : op_table()) {
    recorder.seen.clear();
    call(i.op, *w);
    EXPECT_TRUE(recorder.seen.count(i.op))
        << name(i.op) << " did not reach the backend under " << wrapper;
  }
}

TEST(Forwarding, EveryOpReachesTheWrappedBackend) {
  check_every_op("ForwardingBackend", [](Backend& inner) {
    return std::make_unique<ForwardingBackend>(inner);
  });
}

TEST(Forwarding, EveryOpGoesThroughAutodiff) {
  check_every_op("autodiff::Backend", [](Backend& inner) {
    return std::make_unique<autodiff::Backend>(inner);
  });
}

TEST(Forwarding, EveryOpGoesThroughTheProfiler) {
  check_every_op("bench::OpProfiler", [](Backend& inner) {
    return std::make_unique<bench::OpProfiler>(inner, false);
  });
}

TEST(Forwarding, TheProfilerCountsEveryCall) {
  cpu::Backend cpu;
  bench::OpProfiler prof(cpu, false);
  const Tensor x = randn({2, 3}, prof, 1);
  exp(x);
  exp(x);
  const auto& e = prof.entries();
  const auto it = e.find("exp f32[2, 3] <- f32[2, 3]");
  ASSERT_NE(it, e.end());
  EXPECT_EQ(it->second.calls, 2);
  EXPECT_EQ(e.at("normal f32[2, 3]").calls, 1);
}

}  // namespace
}  // namespace nascent

namespace nascent {
namespace {

TEST(Forwarding, InnermostReachesTheOwnerOfTheBytesThroughEveryWrapper) {
  cpu::Backend cpu;
  autodiff::Backend ad(cpu);
  bench::OpProfiler profiled(ad, false);
  Tensor t = arange(0, 6, 1, profiled, DType::f32).reshape({2, 3});
  Tensor view = t.transpose();
  Tensor inner = innermost(view);
  EXPECT_EQ(&inner.backend(), &cpu);
  EXPECT_EQ(inner.shape(), view.shape());
  EXPECT_EQ(inner.strides(), view.strides());
  EXPECT_EQ(inner.to_vector<float>(), view.to_vector<float>());
  // The same bytes: a write through the inner handle shows outside.
  assign(inner, 7.0);
  for (float v : t.to_vector<float>()) EXPECT_EQ(v, 7.0f);
  Tensor plain = ones({2}, cpu);
  EXPECT_TRUE(innermost(plain).same_view(plain));
}

}  // namespace
}  // namespace nascent
