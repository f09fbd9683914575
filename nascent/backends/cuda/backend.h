// The CUDA backend: one GPU, one stream, lazy results.
//
//   nascent::cuda::Backend gpu(/*device*/ 0);
//   Tensor x = randn({4096, 4096}, gpu, 1);     // runs on the GPU
//   Tensor y = softmax(matmul(x, x), -1);       // enqueued, returns at once
//   std::vector<float> v = y.to_vector<float>(); // the only wait
//
// Every op is enqueued on the backend's stream and returns at once; results
// stay on the device. materialize() is the only readback: it copies the
// tensor into pinned host memory on the stream and waits on an event for
// that copy, not for the whole device. Memory comes from a stream-ordered
// caching allocator (allocator.h): a tensor's block goes back to the cache
// the moment its last handle dies, trim() returns cached blocks to the
// driver, and running out of memory raises nascent::OutOfMemory after one
// trim-and-retry. One file per op family: copy.cu, random.cu, unary.cu,
// binary.cu, reduce.cu, scan.cu, softmax.cu, norm.cu, index.cu, pool.cu,
// conv.cu, matmul.cpp, quant.cu (and its mat-vec kernels, qmatvec.cu),
// optim.cu, rope.cu, attention.cu; glu runs in unary.cu.
//
// This header holds no CUDA types, so host code that only uses the backend
// compiles with any C++ compiler.
#pragma once

#include <memory>
#include <string>

#include "nascent/core/backend.h"
#include "nascent/core/tensor.h"

namespace nascent::cuda {

// The device state shared by a backend and every allocation it made, so
// that tensors may outlive the Backend object (context.h).
struct Context;

class Backend final : public nascent::Backend {
 public:
  // Throws BackendError naming the device if it cannot be used.
  explicit Backend(int device = 0);
  ~Backend() override;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // GPUs the driver reports; 0 without a driver or a device. Never throws.
  static int device_count();

  std::string name() const override;  // "cuda:0"
  int device() const;
  // f32 matmul and convolution on tensor cores in TF32 (10-bit mantissa):
  // faster, less exact. Off by default.
  void set_allow_tf32(bool allow);
  bool allow_tf32() const;
  // Waits until every op enqueued so far has finished (benchmarks, tests).
  void synchronize();
  // The cudaStream_t the ops run on, for code that mixes in its own kernels
  // or times with CUDA events.
  void* native_stream() const;
  Context& context() const { return *ctx_; }

  std::shared_ptr<BackendData> allocate(size_t nbytes) override;
  std::shared_ptr<BackendData> upload(const void* host, size_t nbytes) override;
  HostBytes materialize(const Tensor& t) override;
  void release(Tensor& t) override;
  void set_persistent(const Tensor& t, bool persistent) override;
  bool is_persistent(const Tensor& t) const override;
  void trim() override;
  MemoryStats memory_stats() const override;

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
  std::shared_ptr<Context> ctx_;
};

}  // namespace nascent::cuda
