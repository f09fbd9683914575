// A Backend for running the conformance cases on the WebGPU backend: every
// op goes to the WebGPU backend, except calls that involve a dtype the
// backend does not take (f64, f16, bf16, and i64 outside the ops that take
// it) or an op it does not run yet,
// which the CPU backend runs on host copies and writes back into the
// WebGPU storage. The cases make their inputs and read their results
// through f64 (random_tensor, to_host), which WebGPU lacks: this keeps the
// cases as they are. It counts, per op, the calls each side ran, so a test
// can require that the op under test ran on the GPU.
#pragma once

#include <array>
#include <functional>
#include <initializer_list>
#include <set>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/webgpu/backend.h"
#include "nascent/core/forwarding.h"

namespace nascent::webgpu::testing {

class HostFallbackBackend final : public ForwardingBackend {
 public:
  // `not_yet`: the ops the WebGPU backend does not run yet; `i64_ops`
  // those whose i64 calls it runs.
  HostFallbackBackend(webgpu::Backend& gpu, cpu::Backend& cpu,
                      std::set<Op> not_yet, std::set<Op> i64_ops)
      : ForwardingBackend(gpu),
        gpu_(gpu),
        cpu_(cpu),
        not_yet_(std::move(not_yet)),
        i64_ops_(std::move(i64_ops)) {}
  std::string name() const override { return gpu_.name() + "+host"; }
  int gpu_calls(Op op) const { return gpu_calls_[size_t(op)]; }
  int cpu_calls(Op op) const { return cpu_calls_[size_t(op)]; }

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
  void quant(QuantOp op, const Tensor* x,
             std::span<const QuantArg> args) override;
  void optim(OptimOp op, const OptimParams& p, Tensor& param,
             const Tensor& grad, Tensor* state0, Tensor* state1) override;
  void rope(const Tensor& x, const Tensor& positions,
            const Tensor* freq_factors, const RopeParams& p,
            Tensor& out) override;
  void attention(const Tensor& q, const Tensor& k, const Tensor& v,
                 const Tensor* mask, const AttentionParams& p,
                 Tensor& out) override;
  void glu(GluOp op, const Tensor& gate, const Tensor& up,
           Tensor& out) override;

 private:
  // Maps a tensor of the call to its CPU copy (null stays null).
  using Shadow = std::function<Tensor*(const Tensor*)>;
  // Runs `gpu` unless the call needs the CPU, then `cpu` on host copies of
  // every tensor named, writing `written` back.
  void run(Op op, std::initializer_list<const Tensor*> inputs,
           std::initializer_list<Tensor*> written,
           const std::function<void()>& gpu,
           const std::function<void(const Shadow&)>& cpu);
  bool needs_cpu(Op op, std::initializer_list<const Tensor*> inputs,
                 std::initializer_list<Tensor*> written) const;

  webgpu::Backend& gpu_;
  cpu::Backend& cpu_;
  std::set<Op> not_yet_;
  std::set<Op> i64_ops_;
  std::array<int, kNumOps> gpu_calls_{};
  std::array<int, kNumOps> cpu_calls_{};
};

}  // namespace nascent::webgpu::testing
