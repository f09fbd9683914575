// The CPU backend: host memory, multithreaded kernels with SIMD chosen at run
// time (Google Highway). One file per op family (unary.cpp, binary.cpp,
// reduce.cpp, matmul.cpp, conv.cpp, pool_simd.cpp, softmax_simd.cpp,
// norm_simd.cpp, attention.cpp, rope.cpp, glu.cpp, index.cpp, copy.cpp,
// creation.cpp, random.cpp, quant.cpp, optim.cpp); the kernels they share sit
// in subfolders: simd/ (Highway helpers), gemm/, conv/, reduce/, quant/. A
// file named *_simd.cpp is compiled once per SIMD target (foreach_target.h).
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include "nascent/core/backend.h"
#include "nascent/core/tensor.h"

namespace nascent::cpu {

class Backend;

// Host memory, 64-byte aligned so SIMD loads of whole cache lines line up;
// or memory owned elsewhere (Backend::wrap), which `keep` holds alive.
class CpuData final : public BackendData {
 public:
  CpuData(size_t nbytes, Backend* owner);
  CpuData(std::shared_ptr<const void> keep, const void* data, size_t nbytes,
          Backend* owner);
  ~CpuData() override;
  std::byte* bytes() const { return ptr_; }
  bool wrapped() const { return keep_ != nullptr; }
  bool persistent = false;

 private:
  std::byte* ptr_;
  size_t capacity_;  // Bytes actually allocated (a size class, see storage).
  Backend* owner_;
  std::shared_ptr<const void> keep_;
};

// Freed large blocks kept for reuse (storage.cpp explains why).
class HostCache {
 public:
  HostCache();
  ~HostCache();
  HostCache(const HostCache&) = delete;
  HostCache& operator=(const HostCache&) = delete;
  // A block of at least nbytes; `capacity` receives its real size.
  std::byte* take(size_t nbytes, size_t& capacity);
  void give(std::byte* ptr, size_t capacity);
  void trim();
  size_t cached_bytes() const;

 private:
  mutable std::mutex mutex_;
  std::multimap<size_t, std::byte*> free_;
  size_t cached_ = 0;
  size_t limit_;
};

struct Options {
  // The transformer ops (rope, attention, glu, qembedding, qmatmul over
  // several weights) run the CPU's fused kernels; false runs core's
  // composed defaults instead, to test and measure what a backend without
  // those kernels computes and pays (device "cpu:composed").
  bool fused = true;
};

class Backend final : public nascent::Backend {
 public:
  Backend() = default;
  explicit Backend(Options options) : fused_(options.fused) {}
  std::string name() const override { return fused_ ? "cpu" : "cpu:composed"; }
  bool fused() const { return fused_; }

  std::shared_ptr<BackendData> allocate(size_t nbytes) override;
  std::shared_ptr<BackendData> upload(const void* host, size_t nbytes) override;
  // Storage over host memory that lives elsewhere, without a copy: a GGUF
  // file mapped into memory, a buffer of the caller's. `owner` (non-null)
  // keeps it alive while any tensor uses it. The bytes are read, never
  // written, as long as the tensors are only op inputs (views of them are
  // fine; writing into them is the caller's business, and a read-only
  // mapping would fault). They need no alignment and do not count in
  // memory_stats(). Wrap with Tensor::make, e.g. a GGUF q4_K weight:
  //   Tensor::make({n, bytes}, {bytes, 1}, 0, DType::u8, cpu,
  //                cpu.wrap(mapping, ptr, n * bytes))
  std::shared_ptr<BackendData> wrap(std::shared_ptr<const void> owner,
                                    const void* data, size_t nbytes) override;
  HostBytes materialize(const Tensor& t) override;
  void set_persistent(const Tensor& t, bool persistent) override;
  bool is_persistent(const Tensor& t) const override;
  void trim() override;  // Frees the cached blocks.
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
  int64_t qmatmul_block_rows(QuantType type) const override;
  void optim(OptimOp op, const OptimParams& p, Tensor& param,
             const Tensor& grad, Tensor* state0, Tensor* state1) override;
  // rope.cpp, attention.cpp, glu.cpp: f32 kernels (the composed defaults
  // for other dtypes, or when not fused).
  void rope(const Tensor& x, const Tensor& positions,
            const Tensor* freq_factors, const RopeParams& p,
            Tensor& out) override;
  void attention(const Tensor& q, const Tensor& k, const Tensor& v,
                 const Tensor* mask, const AttentionParams& p,
                 Tensor& out) override;
  void glu(GluOp op, const Tensor& gate, const Tensor& up,
           Tensor& out) override;

 private:
  friend class CpuData;
  void account(int64_t delta);
  HostCache cache_;
  bool fused_ = true;

  std::atomic<int64_t> allocated_{0};
  std::atomic<int64_t> persistent_{0};
  std::atomic<int64_t> peak_{0};
};

// Element pointer of a CPU tensor (storage base + offset).
template <class T>
T* data_ptr(const Tensor& t) {
  auto* d = static_cast<CpuData*>(t.data().get());
  return reinterpret_cast<T*>(d->bytes()) + t.offset();
}
inline std::byte* byte_ptr(const Tensor& t) {
  auto* d = static_cast<CpuData*>(t.data().get());
  return d->bytes() + t.offset() * int64_t(t.itemsize());
}

}  // namespace nascent::cpu
