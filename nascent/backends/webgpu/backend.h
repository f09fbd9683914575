// The WebGPU backend: one adapter, one device, lazy results, WGSL kernels
// through the standard webgpu.h (wgpu-native; cmake/webgpu.cmake).
//
//   nascent::webgpu::Backend gpu;                // the first adapter
//   Tensor x = from_vector(v, {64, 64}, gpu);    // uploaded once
//   Tensor y = softmax(matmul(x, x), -1);        // recorded, returns at once
//   std::vector<float> r = y.to_vector<float>(); // the only wait
//
// Ops record compute passes into one command encoder and return at once;
// the encoder is submitted when a tensor is materialized, before an upload
// and after every kMaxDispatches dispatches (memory stays bounded).
// materialize() copies that tensor's bytes into a staging buffer, maps it
// and waits for it. Memory comes from a pool of buffers by size class
// (powers of two): a tensor's buffer goes back to the pool when its last
// handle dies and is reused without creating one; trim() releases the free
// ones; set_persistent marks parameters (counted apart in memory_stats).
//
// Element types: f32, i32, u8 and bool (u8 and bool packed four to a u32
// word, as WGSL has no 8-bit type), and i64 as two words in copy, fill,
// binary ops, where, sum, cumsum and the index ops (int64.cpp). WebGPU has
// no f64: an op given one raises DTypeError naming the op and the adapter,
// except a copy into it (reading results as doubles); f16 and bf16 are not
// done yet (DTypeError too). One file per op family: creation.cpp (fill,
// arange), copy.cpp, unary.cpp, binary.cpp (and where), math.cpp (the WGSL
// math library), reduce.cpp, scan.cpp, matmul.cpp, softmax.cpp, norm.cpp,
// index.cpp, optim.cpp, glu.cpp; the families not done yet raise
// BackendError naming the op.
//
// Device errors (validation, out of memory, a lost device) are caught by
// the device's callbacks and raised as BackendError naming the op; nothing
// aborts. This header holds no webgpu.h types.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nascent/core/backend.h"
#include "nascent/core/tensor.h"

namespace nascent::webgpu {

// Instance, adapter, device, queue, pool and the open encoder, shared by
// the backend and every buffer it made (context.h), so that tensors may
// outlive the Backend object.
struct Context;

// An adapter as the instance reports it (`nascent info --devices`).
struct AdapterInfo {
  std::string name;     // "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string backend;  // "vulkan"
  std::string type;     // "discrete GPU", "integrated GPU", "CPU"
  bool shader_f16 = false;
  uint64_t max_storage_binding = 0;  // Bytes.
  uint32_t max_workgroup_storage = 0;
};

class Backend final : public nascent::Backend {
 public:
  // Dispatches recorded before the encoder is submitted on its own.
  static constexpr int kMaxDispatches = 256;

  // Throws BackendError saying why when no adapter or device is available.
  Backend();
  ~Backend() override;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // The adapters the instance sees; empty (never throws) without a driver.
  static std::vector<AdapterInfo> adapters();

  std::string name() const override;  // "webgpu:<adapter name>"
  const AdapterInfo& adapter() const;
  // Submits the open encoder and waits until the device is idle.
  void synchronize();
  // Dispatches recorded so far (tests, benchmarks).
  int64_t dispatches() const;
  Context& context() const { return *ctx_; }
  // Writes host bytes over the first `nbytes` of a storage this backend
  // made, after the work recorded so far (tests, loaders).
  void write_storage(const BackendData& data, const void* host, size_t nbytes);

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
  void glu(GluOp op, const Tensor& gate, const Tensor& up,
           Tensor& out) override;

 private:
  std::shared_ptr<Context> ctx_;
};

}  // namespace nascent::webgpu
