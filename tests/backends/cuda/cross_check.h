// A Backend that runs every op on the CUDA backend and again on the CPU
// backend, on host copies of the same inputs, and fails the current test
// when the results differ by more than the op family allows. Tensors made
// through it live on the GPU; the conformance cases then also compare the
// GPU's results with their float64 references.
#pragma once

#include <string>
#include <vector>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cuda/backend.h"
#include "nascent/core/forwarding.h"

namespace nascent::cuda::testing {

class CrossCheckBackend final : public ForwardingBackend {
 public:
  CrossCheckBackend(cuda::Backend& gpu, cpu::Backend& cpu)
      : ForwardingBackend(gpu), gpu_(gpu), cpu_(cpu) {}
  std::string name() const override { return gpu_.name() + "+cpu"; }
  // Ops compared so far, and mismatching results (for the test's summary).
  int compared() const { return compared_; }

  // Storage, materialize and the releaser go to the GPU as they are
  // (ForwardingBackend); every op family is compared below.
  void create(CreationOp op, Scalar a, Scalar b, Tensor& out) override;
  void random(RandomOp op, const RandomParams& p, Tensor& out) override;
  void copy(const Tensor& src, Tensor& dst) override;
  void unary(UnaryOp op, const Tensor& x, const UnaryParams& p,
             Tensor& out) override;
  void binary(BinaryOp op, const Tensor& a, const Tensor& b,
              Tensor& out) override;
  void where(const Tensor& cond, const Tensor& a, const Tensor& b,
             Tensor& out) override;
  void reduce(ReduceOp op, const Tensor& x, const std::vector<int>& axes,
              const ReduceParams& p, Tensor& out) override;
  void scan(ScanOp op, const Tensor& x, int axis, Tensor& out) override;
  void matmul(const Tensor& a, const Tensor& b, Tensor& out) override;
  void conv2d(ConvOp op, const Tensor& a, const Tensor& b, const Tensor* bias,
              const Conv2dParams& p, Tensor& out) override;
  void pool2d(PoolOp op, const Tensor& x, const Tensor* indices,
              const Pool2dParams& p, Tensor& out, Tensor* out_indices) override;
  void softmax(SoftmaxOp op, const Tensor& x, int axis, Tensor& out) override;
  void norm(NormOp op, const Tensor& x, const Tensor* weight,
            const Tensor* bias, double eps, Tensor& out, Tensor* mean,
            Tensor* rstd) override;
  void index(IndexOp op, const Tensor& x, int axis, const Tensor& index,
             const Tensor* src, Tensor& out) override;
  // dequantize, qembedding and quantize must match the CPU bit for bit; qmatmul
  // is compared with the CPU's f32 product of the CPU-decoded weights: float
  // weights within a long sum's error, the block types within that of x
  // rounded to 8 bits per block (the CPU's own qmatmul rounds x so; the
  // GPU's f16 products of prompts round x and W less).
  void quant(QuantOp op, const Tensor* x,
             std::span<const QuantArg> args) override;
  // The GPU's fused update against the CPU's: f16 and bf16 against the CPU's
  // f32 update of the same values (the GPU computes them in float and rounds
  // once; the CPU's own half update rounds after every composed op).
  void optim(OptimOp op, const OptimParams& p, Tensor& param,
             const Tensor& grad, Tensor* state0, Tensor* state1) override;
  // The transformer ops: the GPU's kernels (or its composed defaults, for
  // the dtypes they lack) against the CPU's.
  void rope(const Tensor& x, const Tensor& positions,
            const Tensor* freq_factors, const RopeParams& p,
            Tensor& out) override;
  void attention(const Tensor& q, const Tensor& k, const Tensor& v,
                 const Tensor* mask, const AttentionParams& p,
                 Tensor& out) override;
  void glu(GluOp op, const Tensor& gate, const Tensor& up,
           Tensor& out) override;

 private:
  // How closely the GPU must follow the CPU: bit for bit (selections,
  // integer and IEEE-exact arithmetic), within a few roundings (element-wise
  // math), or within the error of a long sum (reductions, products).
  enum class Tolerance { exact, elementwise, sums };

  // A CPU copy of t's whole storage, viewed as t is.
  Tensor shadow(const Tensor& t);
  // The same view bound to the GPU backend (reads must not come back here).
  Tensor on_gpu(const Tensor& t);
  // extra: a bound per element added to the tolerance's.
  void compare(const char* op, const Tensor& gpu, const Tensor& cpu,
               Tolerance tol, const std::vector<double>* extra = nullptr);

  cuda::Backend& gpu_;
  cpu::Backend& cpu_;
  int compared_ = 0;
};

}  // namespace nascent::cuda::testing
