// The WebGPU backend's device state (internal to nascent/backends/webgpu/):
// the device and its queue, the buffer pool, the open command encoder with
// its arena of kernel parameters, and the cache of compiled pipelines.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <webgpu.h>
#include <wgpu.h>

#include "nascent/backends/webgpu/backend.h"

namespace nascent::webgpu {

// Storage of one tensor: a buffer of the pool, returned to it by the
// destructor.
class WebGpuData final : public BackendData {
 public:
  WebGpuData(size_t nbytes, std::shared_ptr<Context> ctx);
  ~WebGpuData() override;
  WGPUBuffer buffer() const { return buffer_; }
  size_t capacity() const { return capacity_; }
  bool persistent = false;

 private:
  std::shared_ptr<Context> ctx_;
  WGPUBuffer buffer_ = nullptr;
  size_t capacity_ = 0;
};

struct Context {
  Context();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  WGPUInstance instance = nullptr;
  WGPUAdapter adapter = nullptr;
  WGPUDevice device = nullptr;
  WGPUQueue queue = nullptr;
  AdapterInfo info;
  WGPULimits limits{};
  int64_t dispatches = 0;

  // Errors the device reported (its callbacks append here); check() raises
  // them as a BackendError naming the op.
  std::string errors;
  bool lost = false;
  void check(const char* op);
  // Waits until `*done` is set by a callback of this instance.
  void wait(const bool* done);

  // The pool: free buffers by size class. Buffers are released, never
  // destroyed, so that work already submitted keeps them alive.
  std::mutex mutex;
  std::multimap<size_t, WGPUBuffer> free;
  MemoryStats stats;
  WGPUBuffer take(size_t capacity, const char* op);
  void give(WGPUBuffer buffer, size_t capacity, bool persistent);
  void trim();

  // The open encoder and the parameters of its dispatches, written into
  // one buffer just before the submit.
  WGPUCommandEncoder encoder = nullptr;
  WGPUBuffer params = nullptr;
  std::vector<uint32_t> param_words;
  int pending = 0;
  WGPUCommandEncoder open_encoder();
  void flush();  // Submits the open encoder, if any.

  std::unordered_map<std::string, WGPUComputePipeline> pipelines;
  // The pipeline of `key`, compiled from source() the first time.
  WGPUComputePipeline pipeline(const std::string& key,
                               const std::string& source, const char* op);
  // Records one dispatch: binding 0 is `params` (read-only storage),
  // bindings 1.. the buffers (read-write storage, whole). `threads` are
  // spread over workgroups of `group` invocations (2-D past 65535 groups;
  // shaders use linear_id()).
  void dispatch(const char* op, WGPUComputePipeline pipe,
                std::span<const uint32_t> params,
                std::span<const WGPUBuffer> buffers, uint64_t groups);
};

// Bytes of a tensor's storage on the device.
inline WGPUBuffer buffer_of(const Tensor& t) {
  return static_cast<WebGpuData*>(t.data().get())->buffer();
}

// Element types the kernels take: f32, i32, u8 and bool, and i64 where
// `takes_i64` (two u32 words, low first: copy, fill, binary ops, where,
// sum, cumsum, the index ops), and f64 where `takes_f64` (stored as two
// words; only copy converts into it, so that results can be read as
// doubles). DTypeError naming the op and the adapter otherwise.
void check_dtype(const Context& ctx, const char* op, const Tensor& t,
                 bool takes_i64 = false, bool takes_f64 = false);
// BackendError for an op this backend does not run yet.
[[noreturn]] void not_implemented(const char* op);

// --- WGSL helpers shared by the op families ----------------------------------

// The WGSL type a dtype computes in (f32, i32, u32 for u8 and bool,
// vec2<u32> for i64: int64_wgsl()'s functions work on it).
const char* wgsl_type(DType dtype);
// Declares `var<storage, read_write> NAME: array<...>` at `binding`
// (array<atomic<u32>> for u8/bool outputs, which are written a byte at a
// time) and the functions load_NAME(i) -> wgsl_type and, for outputs,
// store_NAME(i, v), indexing elements.
std::string declare(const std::string& name, int binding, DType dtype,
                    bool output);
// The parameters of a strided walk over `shape` of up to kMaxRank axes:
// every tensor's offset and strides (elements) for the same shape. Layout in
// the parameter words: [numel, rank, shape[8], then per tensor: offset,
// strides[8]]; elem(t, i) in WGSL gives tensor t's element of linear
// index i.
inline constexpr int kMaxRank = 8;
std::vector<uint32_t> strided_params(const Shape& shape,
                                     std::span<const Tensor* const> tensors);
// The header of every kernel: the parameters at binding 0, linear_id() and
// elem(t, i).
std::string prelude(int workgroup_size);
inline constexpr int kGroup = 256;
// Workgroups for `n` threads of kGroup.
inline uint64_t groups_for(int64_t n) {
  return uint64_t((n + kGroup - 1) / kGroup);
}

}  // namespace nascent::webgpu
