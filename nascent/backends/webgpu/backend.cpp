// The WebGPU backend's device state, storage, readback and releaser, and
// the WGSL helpers the op families share.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "nascent/backends/common/geometry.h"
#include "nascent/backends/webgpu/context.h"
#include "nascent/core/error.h"

namespace nascent::webgpu {

namespace {

WGPUStringView view(const char* s) {
  return WGPUStringView{s, WGPU_STRLEN};
}

std::string to_string(WGPUStringView s) {
  if (s.data == nullptr) return {};
  return s.length == WGPU_STRLEN ? std::string(s.data)
                                 : std::string(s.data, s.length);
}

const char* backend_name(WGPUBackendType t) {
  switch (t) {
    case WGPUBackendType_Vulkan:
      return "vulkan";
    case WGPUBackendType_Metal:
      return "metal";
    case WGPUBackendType_D3D12:
      return "d3d12";
    case WGPUBackendType_D3D11:
      return "d3d11";
    case WGPUBackendType_OpenGL:
    case WGPUBackendType_OpenGLES:
      return "opengl";
    default:
      return "other";
  }
}

const char* adapter_type(WGPUAdapterType t) {
  switch (t) {
    case WGPUAdapterType_DiscreteGPU:
      return "discrete GPU";
    case WGPUAdapterType_IntegratedGPU:
      return "integrated GPU";
    case WGPUAdapterType_CPU:
      return "CPU";
    default:
      return "unknown";
  }
}

// Sizes round up to a power of two (at least 256 bytes) so that buffers are
// reused across similar requests, and to 16 MiB steps past 64 MiB.
size_t size_class(size_t n) {
  constexpr size_t kBig = size_t(64) << 20, kStep = size_t(16) << 20;
  if (n > kBig) return (n + kStep - 1) / kStep * kStep;
  size_t c = 256;
  while (c < n) c *= 2;
  return c;
}

constexpr size_t kSlotWords = 256;  // Parameter words a dispatch may use.

struct AdapterRequest {
  bool done = false;
  WGPUAdapter adapter = nullptr;
  std::string message;
};

struct DeviceRequest {
  bool done = false;
  WGPUDevice device = nullptr;
  std::string message;
};

AdapterInfo describe(WGPUAdapter adapter) {
  AdapterInfo out;
  WGPUAdapterInfo info{};
  if (wgpuAdapterGetInfo(adapter, &info) == WGPUStatus_Success) {
    out.name = to_string(info.device);
    if (out.name.empty()) out.name = to_string(info.description);
    out.backend = backend_name(info.backendType);
    out.type = adapter_type(info.adapterType);
    wgpuAdapterInfoFreeMembers(info);
  }
  WGPULimits limits{};
  if (wgpuAdapterGetLimits(adapter, &limits) == WGPUStatus_Success) {
    out.max_storage_binding = limits.maxStorageBufferBindingSize;
    out.max_workgroup_storage = limits.maxComputeWorkgroupStorageSize;
  }
  out.shader_f16 = wgpuAdapterHasFeature(adapter, WGPUFeatureName_ShaderF16);
  return out;
}

// Polls until `*done`: wgpu-native lacks wgpuInstanceWaitAny, so callbacks
// run in AllowProcessEvents mode from wgpuInstanceProcessEvents.
void wait_instance(WGPUInstance instance, WGPUDevice device, const bool* done) {
  for (int spins = 0; !*done; ++spins) {
    if (device != nullptr) wgpuDevicePoll(device, true, nullptr);
    wgpuInstanceProcessEvents(instance);
    if (spins > 1000000) {
      throw BackendError("webgpu backend: a device callback never came");
    }
  }
}

WGPUAdapter request_adapter(WGPUInstance instance, std::string* message) {
  AdapterRequest req;
  WGPURequestAdapterCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPURequestAdapterStatus status, WGPUAdapter adapter,
                   WGPUStringView msg, void* user, void*) {
    auto* r = static_cast<AdapterRequest*>(user);
    if (status == WGPURequestAdapterStatus_Success) r->adapter = adapter;
    r->message = to_string(msg);
    r->done = true;
  };
  cb.userdata1 = &req;
  WGPURequestAdapterOptions options{};
  options.featureLevel = WGPUFeatureLevel_Core;
  options.powerPreference = WGPUPowerPreference_HighPerformance;
  wgpuInstanceRequestAdapter(instance, &options, cb);
  wait_instance(instance, nullptr, &req.done);
  *message = req.message;
  return req.adapter;
}

}  // namespace

// --- Context -----------------------------------------------------------------

Context::Context() {
  instance = wgpuCreateInstance(nullptr);
  if (instance == nullptr) {
    throw BackendError("webgpu backend: wgpuCreateInstance failed");
  }
  std::string message;
  adapter = request_adapter(instance, &message);
  if (adapter == nullptr) {
    wgpuInstanceRelease(instance);
    instance = nullptr;
    throw BackendError(fmt::format(
        "webgpu backend: no adapter found ({}); without a GPU, install "
        "Mesa's lavapipe (mesa-vulkan-drivers) and set "
        "VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
        message.empty() ? "the instance offers none" : message));
  }
  info = describe(adapter);
  WGPULimits wanted{};
  wgpuAdapterGetLimits(adapter, &wanted);
  wanted.nextInChain = nullptr;

  DeviceRequest req;
  WGPUDeviceDescriptor desc{};
  desc.label = view("nascent");
  desc.requiredLimits = &wanted;
  desc.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowProcessEvents;
  desc.deviceLostCallbackInfo.callback =
      [](WGPUDevice const*, WGPUDeviceLostReason reason, WGPUStringView msg,
         void* user, void*) {
        if (reason == WGPUDeviceLostReason_Destroyed ||
            reason == WGPUDeviceLostReason_CallbackCancelled) {
          return;
        }
        auto* ctx = static_cast<Context*>(user);
        ctx->lost = true;
        ctx->errors += "device lost: " + to_string(msg) + "; ";
      };
  desc.deviceLostCallbackInfo.userdata1 = this;
  desc.uncapturedErrorCallbackInfo.callback = [](WGPUDevice const*,
                                                 WGPUErrorType type,
                                                 WGPUStringView msg, void* user,
                                                 void*) {
    auto* ctx = static_cast<Context*>(user);
    const char* kind = type == WGPUErrorType_OutOfMemory  ? "out of memory"
                       : type == WGPUErrorType_Validation ? "validation error"
                                                          : "internal error";
    ctx->errors += fmt::format("{}: {}; ", kind, to_string(msg));
  };
  desc.uncapturedErrorCallbackInfo.userdata1 = this;
  WGPURequestDeviceCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPURequestDeviceStatus status, WGPUDevice made,
                   WGPUStringView msg, void* user, void*) {
    auto* r = static_cast<DeviceRequest*>(user);
    if (status == WGPURequestDeviceStatus_Success) r->device = made;
    r->message = to_string(msg);
    r->done = true;
  };
  cb.userdata1 = &req;
  wgpuAdapterRequestDevice(adapter, &desc, cb);
  wait_instance(instance, nullptr, &req.done);
  if (req.device == nullptr) {
    wgpuAdapterRelease(adapter);
    wgpuInstanceRelease(instance);
    throw BackendError(
        fmt::format("webgpu backend: the adapter {} gave no device: {}",
                    info.name, req.message));
  }
  device = req.device;
  queue = wgpuDeviceGetQueue(device);
  limits = WGPULimits{};
  wgpuDeviceGetLimits(device, &limits);
}

Context::~Context() {
  try {
    flush();
    if (device != nullptr) wgpuDevicePoll(device, true, nullptr);
  } catch (const Error&) {
    // A failed submit at exit has no one to report to.
  }
  for (auto& [key, p] : pipelines) wgpuComputePipelineRelease(p);
  for (auto& [size, b] : free) wgpuBufferRelease(b);
  if (queue != nullptr) wgpuQueueRelease(queue);
  if (device != nullptr) wgpuDeviceRelease(device);
  if (adapter != nullptr) wgpuAdapterRelease(adapter);
  if (instance != nullptr) wgpuInstanceRelease(instance);
}

void Context::check(const char* op) {
  if (errors.empty()) return;
  std::string what = std::move(errors);
  errors.clear();
  // The open encoder may have recorded the failed command: drop it.
  if (encoder != nullptr) {
    wgpuCommandEncoderRelease(encoder);
    encoder = nullptr;
    if (params != nullptr) wgpuBufferRelease(params);
    params = nullptr;
    param_words.clear();
    pending = 0;
  }
  if (what.size() >= 2) what.resize(what.size() - 2);
  throw BackendError(
      fmt::format("webgpu backend: {} failed on {}: {}", op, info.name, what));
}

void Context::wait(const bool* done) {
  wait_instance(instance, device, done);
}

WGPUBuffer Context::take(size_t capacity, const char* op) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = free.find(capacity);
    if (it != free.end()) {
      WGPUBuffer b = it->second;
      free.erase(it);
      stats.cached_bytes -= capacity;
      stats.allocated_bytes += capacity;
      stats.peak_bytes = std::max(stats.peak_bytes, stats.allocated_bytes);
      return b;
    }
  }
  if (capacity > limits.maxBufferSize) {
    throw OutOfMemory(fmt::format(
        "webgpu backend: {} needs a buffer of {} bytes; the adapter {} "
        "allows at most {}",
        op, capacity, info.name, limits.maxBufferSize));
  }
  WGPUBufferDescriptor desc{};
  desc.usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc |
               WGPUBufferUsage_CopyDst;
  desc.size = capacity;
  WGPUBuffer b = wgpuDeviceCreateBuffer(device, &desc);
  if (b == nullptr || !errors.empty()) {
    // Once more after giving the cached buffers back.
    errors.clear();
    if (b != nullptr) wgpuBufferRelease(b);
    trim();
    b = wgpuDeviceCreateBuffer(device, &desc);
    if (b == nullptr || !errors.empty()) {
      errors.clear();
      if (b != nullptr) wgpuBufferRelease(b);
      throw OutOfMemory(
          fmt::format("webgpu backend: {} could not allocate {} bytes on {}",
                      op, capacity, info.name));
    }
  }
  std::lock_guard<std::mutex> lock(mutex);
  stats.allocated_bytes += capacity;
  stats.peak_bytes = std::max(stats.peak_bytes, stats.allocated_bytes);
  return b;
}

void Context::give(WGPUBuffer buffer, size_t capacity, bool persistent) {
  std::lock_guard<std::mutex> lock(mutex);
  stats.allocated_bytes -= capacity;
  if (persistent) stats.persistent_bytes -= capacity;
  stats.cached_bytes += capacity;
  free.emplace(capacity, buffer);
}

void Context::trim() {
  // Work recorded but not submitted may still name a free buffer.
  flush();
  std::lock_guard<std::mutex> lock(mutex);
  for (auto& [size, b] : free) wgpuBufferRelease(b);
  free.clear();
  stats.cached_bytes = 0;
}

WGPUCommandEncoder Context::open_encoder() {
  if (encoder == nullptr) {
    encoder = wgpuDeviceCreateCommandEncoder(device, nullptr);
    WGPUBufferDescriptor desc{};
    desc.usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst;
    desc.size = uint64_t(Backend::kMaxDispatches) * kSlotWords * 4;
    params = wgpuDeviceCreateBuffer(device, &desc);
    param_words.clear();
    pending = 0;
  }
  return encoder;
}

void Context::flush() {
  if (encoder == nullptr) return;
  if (!param_words.empty()) {
    wgpuQueueWriteBuffer(queue, params, 0, param_words.data(),
                         param_words.size() * 4);
  }
  WGPUCommandBuffer commands = wgpuCommandEncoderFinish(encoder, nullptr);
  wgpuCommandEncoderRelease(encoder);
  encoder = nullptr;
  wgpuQueueSubmit(queue, 1, &commands);
  wgpuCommandBufferRelease(commands);
  wgpuBufferRelease(params);
  params = nullptr;
  param_words.clear();
  pending = 0;
  check("submitting the recorded ops");
}

WGPUComputePipeline Context::pipeline(const std::string& key,
                                      const std::string& source,
                                      const char* op) {
  auto it = pipelines.find(key);
  if (it != pipelines.end()) return it->second;
  WGPUShaderSourceWGSL wgsl{};
  wgsl.chain.sType = WGPUSType_ShaderSourceWGSL;
  wgsl.code = WGPUStringView{source.data(), source.size()};
  WGPUShaderModuleDescriptor md{};
  md.nextInChain = &wgsl.chain;
  md.label = view(key.c_str());
  WGPUShaderModule module = wgpuDeviceCreateShaderModule(device, &md);
  WGPUComputePipelineDescriptor pd{};
  pd.label = view(key.c_str());
  pd.compute.module = module;
  pd.compute.entryPoint = view("main");
  WGPUComputePipeline p = wgpuDeviceCreateComputePipeline(device, &pd);
  wgpuShaderModuleRelease(module);
  if (!errors.empty()) {
    if (p != nullptr) wgpuComputePipelineRelease(p);
    check(op);
  }
  pipelines.emplace(key, p);
  return p;
}

void Context::dispatch(const char* op, WGPUComputePipeline pipe,
                       std::span<const uint32_t> words,
                       std::span<const WGPUBuffer> buffers, uint64_t groups) {
  if (groups == 0) return;
  if (words.size() > kSlotWords) {
    throw BackendError(
        fmt::format("webgpu backend: {} needs {} parameter words, more than {}",
                    op, words.size(), kSlotWords));
  }
  const uint64_t max = limits.maxComputeWorkgroupsPerDimension;
  const uint64_t gx = std::min(groups, max);
  const uint64_t gy = (groups + gx - 1) / gx;
  if (gy > max) {
    throw BackendError(fmt::format(
        "webgpu backend: {} needs {} workgroups, more than the adapter's "
        "{} x {}",
        op, groups, max, max));
  }
  if (pending >= Backend::kMaxDispatches) flush();
  open_encoder();
  const size_t slot = size_t(pending) * kSlotWords;
  param_words.resize(slot + kSlotWords, 0);
  std::copy(words.begin(), words.end(), param_words.begin() + long(slot));

  WGPUBindGroupLayout layout = wgpuComputePipelineGetBindGroupLayout(pipe, 0);
  std::vector<WGPUBindGroupEntry> entries(buffers.size() + 1);
  entries[0].binding = 0;
  entries[0].buffer = params;
  entries[0].offset = slot * 4;
  entries[0].size = kSlotWords * 4;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const uint64_t size = wgpuBufferGetSize(buffers[i]);
    if (size > limits.maxStorageBufferBindingSize) {
      wgpuBindGroupLayoutRelease(layout);
      throw BackendError(fmt::format(
          "webgpu backend: {} binds a buffer of {} bytes; the adapter {} "
          "binds at most {}",
          op, size, info.name, limits.maxStorageBufferBindingSize));
    }
    entries[i + 1].binding = uint32_t(i + 1);
    entries[i + 1].buffer = buffers[i];
    entries[i + 1].offset = 0;
    entries[i + 1].size = size;
  }
  WGPUBindGroupDescriptor bd{};
  bd.layout = layout;
  bd.entryCount = entries.size();
  bd.entries = entries.data();
  WGPUBindGroup group = wgpuDeviceCreateBindGroup(device, &bd);
  wgpuBindGroupLayoutRelease(layout);
  WGPUComputePassEncoder pass =
      wgpuCommandEncoderBeginComputePass(encoder, nullptr);
  wgpuComputePassEncoderSetPipeline(pass, pipe);
  wgpuComputePassEncoderSetBindGroup(pass, 0, group, 0, nullptr);
  wgpuComputePassEncoderDispatchWorkgroups(pass, uint32_t(gx), uint32_t(gy), 1);
  wgpuComputePassEncoderEnd(pass);
  wgpuComputePassEncoderRelease(pass);
  wgpuBindGroupRelease(group);
  ++pending;
  ++dispatches;
  check(op);
}

// --- Storage -----------------------------------------------------------------

WebGpuData::WebGpuData(size_t nbytes, std::shared_ptr<Context> ctx)
    : BackendData(nbytes), ctx_(std::move(ctx)) {
  capacity_ = size_class(nbytes);
  buffer_ = ctx_->take(capacity_, "allocate");
}

WebGpuData::~WebGpuData() {
  ctx_->give(buffer_, capacity_, persistent);
}

void check_dtype(const Context& ctx, const char* op, const Tensor& t,
                 bool takes_i64, bool takes_f64) {
  switch (t.dtype()) {
    case DType::f32:
    case DType::i32:
    case DType::u8:
    case DType::boolean:
      return;
    case DType::f64:
      if (takes_f64) return;
      throw DTypeError(fmt::format(
          "webgpu backend: {} got {}: WebGPU has no f64 (adapter {})", op,
          t.to_string(), ctx.info.name));
    case DType::f16:
    case DType::bf16:
      throw DTypeError(fmt::format(
          "webgpu backend: {} got {}: f16 and bf16 are not done yet on the "
          "webgpu backend (adapter {}{})",
          op, t.to_string(), ctx.info.name,
          ctx.info.shader_f16 ? ", which offers shader-f16" : ""));
    case DType::i64:
      if (takes_i64) return;
      throw DTypeError(fmt::format(
          "webgpu backend: {} got {}: i64 is not done yet for this op on the "
          "webgpu backend (WGSL has no 64-bit integers; i64 is stored as two "
          "words and taken by copy, fill, binary ops, where, sum, cumsum and "
          "the index ops; adapter {})",
          op, t.to_string(), ctx.info.name));
  }
}

void not_implemented(const char* op) {
  throw BackendError(
      fmt::format("{} is not implemented yet on the webgpu backend", op));
}

// --- WGSL helpers ------------------------------------------------------------

const char* wgsl_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "f32";
    case DType::i32:
      return "i32";
    case DType::i64:
    case DType::f64:
      return "vec2<u32>";
    default:
      return "u32";
  }
}

std::string declare(const std::string& n, int binding, DType dtype,
                    bool output) {
  const std::string head = fmt::format(
      "@group(0) @binding({}) var<storage, read_write> {}: ", binding, n);
  if (dtype == DType::f32 || dtype == DType::i32) {
    const char* t = wgsl_type(dtype);
    return fmt::format(
        "{0}array<{1}>;\n"
        "fn load_{2}(i: u32) -> {1} {{ return {2}[i]; }}\n"
        "fn store_{2}(i: u32, v: {1}) {{ {2}[i] = v; }}\n",
        head, t, n);
  }
  if (dtype == DType::i64 || dtype == DType::f64) {
    // Two words, low first.
    return fmt::format(
        "{0}array<u32>;\n"
        "fn load_{1}(i: u32) -> vec2<u32> {{\n"
        "  return vec2<u32>({1}[2u * i], {1}[2u * i + 1u]); }}\n"
        "fn store_{1}(i: u32, v: vec2<u32>) {{\n"
        "  {1}[2u * i] = v.x;\n"
        "  {1}[2u * i + 1u] = v.y; }}\n",
        head, n);
  }
  if (!output) {
    return fmt::format(
        "{0}array<u32>;\n"
        "fn load_{1}(i: u32) -> u32 {{\n"
        "  return ({1}[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu; }}\n",
        head, n);
  }
  // Bytes of a word may belong to other threads: write ours atomically.
  return fmt::format(
      "{0}array<atomic<u32>>;\n"
      "fn load_{1}(i: u32) -> u32 {{\n"
      "  return (atomicLoad(&{1}[i >> 2u]) >> ((i & 3u) * 8u)) & 0xffu; }}\n"
      "fn store_{1}(i: u32, v: u32) {{\n"
      "  let s = (i & 3u) * 8u;\n"
      "  atomicAnd(&{1}[i >> 2u], ~(0xffu << s));\n"
      "  atomicOr(&{1}[i >> 2u], (v & 0xffu) << s); }}\n",
      head, n);
}

std::vector<uint32_t> strided_params(const Shape& shape,
                                     std::span<const Tensor* const> tensors) {
  if (shape.size() > size_t(kMaxRank)) {
    throw BackendError(fmt::format(
        "webgpu backend: tensors of rank {} are not supported (at most {})",
        shape.size(), kMaxRank));
  }
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  if (numel > int64_t(UINT32_MAX)) {
    throw BackendError(fmt::format(
        "webgpu backend: {} elements are more than 32-bit indices reach",
        numel));
  }
  std::vector<uint32_t> w(10 + 9 * tensors.size(), 0);
  w[0] = uint32_t(numel);
  w[1] = uint32_t(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) w[2 + d] = uint32_t(shape[d]);
  for (size_t t = 0; t < tensors.size(); ++t) {
    const Tensor& x = *tensors[t];
    w[10 + 9 * t] = uint32_t(x.offset());
    for (size_t d = 0; d < shape.size(); ++d) {
      w[11 + 9 * t + d] = uint32_t(int32_t(x.strides()[d]));
    }
  }
  return w;
}

std::string prelude(int workgroup_size) {
  return fmt::format(R"(
@group(0) @binding(0) var<storage, read> P: array<u32>;
const WG: u32 = {0}u;
var<private> lid: u32;
fn numel() -> u32 {{ return P[0]; }}
fn pf(i: u32) -> f32 {{ return bitcast<f32>(P[i]); }}
fn pi(i: u32) -> i32 {{ return bitcast<i32>(P[i]); }}
// NaN tests on the bits: the driver may compile `v != v` as an ordered
// comparison (false for NaN).
fn is_nan(v: f32) -> bool {{
  return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}}
fn nz_f(v: f32) -> bool {{ return is_nan(v) || v != 0.0; }}
// Element of tensor t at linear (row-major) index i of the shape walked by
// the parameter block at word h.
fn walk(h: u32, t: u32, i: u32) -> u32 {{
  let base = h + 10u + t * 9u;
  var rem = i;
  var off = pi(base);
  var d = P[h + 1u];
  loop {{
    if (d == 0u) {{ break; }}
    d = d - 1u;
    let n = P[h + 2u + d];
    off = off + i32(rem % n) * pi(base + 1u + d);
    rem = rem / n;
  }}
  return u32(off);
}}
fn elem(t: u32, i: u32) -> u32 {{ return walk(0u, t, i); }}
fn finite(v: f32) -> bool {{
  return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}}
)",
                     workgroup_size);
}

// --- Backend -----------------------------------------------------------------

Backend::Backend() : ctx_(std::make_shared<Context>()) {}

Backend::~Backend() = default;

std::vector<AdapterInfo> Backend::adapters() {
  std::vector<AdapterInfo> out;
  WGPUInstance instance = wgpuCreateInstance(nullptr);
  if (instance == nullptr) return out;
  try {
    std::string message;
    WGPUAdapter adapter = request_adapter(instance, &message);
    if (adapter != nullptr) {
      out.push_back(describe(adapter));
      wgpuAdapterRelease(adapter);
    }
  } catch (const Error&) {
    // No adapter: an empty list.
  }
  wgpuInstanceRelease(instance);
  return out;
}

std::string Backend::name() const {
  return "webgpu:" + ctx_->info.name;
}

const AdapterInfo& Backend::adapter() const {
  return ctx_->info;
}

void Backend::synchronize() {
  ctx_->flush();
  wgpuDevicePoll(ctx_->device, true, nullptr);
  ctx_->check("synchronize");
}

int64_t Backend::dispatches() const {
  return ctx_->dispatches;
}

std::shared_ptr<BackendData> Backend::allocate(size_t nbytes) {
  return std::make_shared<WebGpuData>(nbytes, ctx_);
}

std::shared_ptr<BackendData> Backend::upload(const void* host, size_t nbytes) {
  auto data = std::make_shared<WebGpuData>(nbytes, ctx_);
  write_storage(*data, host, nbytes);
  return data;
}

void Backend::write_storage(const BackendData& data, const void* host,
                            size_t nbytes) {
  const auto& d = static_cast<const WebGpuData&>(data);
  nbytes = std::min(nbytes, d.nbytes());
  if (nbytes == 0) return;
  // Recorded work may still use this buffer (or, pooled, its last tenant
  // did): submit it first, so the write lands after it.
  ctx_->flush();
  const size_t whole = nbytes / 4 * 4;
  if (whole > 0) {
    wgpuQueueWriteBuffer(ctx_->queue, d.buffer(), 0, host, whole);
  }
  if (whole < nbytes) {
    // The word's other bytes are past the storage's end (capacity is a
    // multiple of 4), or past what the caller writes: kept as they are.
    uint8_t tail[4] = {0, 0, 0, 0};
    std::memcpy(tail, static_cast<const uint8_t*>(host) + whole,
                nbytes - whole);
    wgpuQueueWriteBuffer(ctx_->queue, d.buffer(), whole, tail, 4);
  }
  ctx_->check("upload");
}

HostBytes Backend::materialize(const Tensor& t) {
  auto* d = static_cast<WebGpuData*>(t.data().get());
  const size_t n = std::min(size_t(common::view_end_bytes(t)), d->nbytes());
  auto host = std::make_shared<std::vector<std::byte>>(n);
  if (n > 0) {
    const size_t copy = (n + 3) / 4 * 4;
    WGPUBufferDescriptor desc{};
    desc.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
    desc.size = copy;
    WGPUBuffer staging = wgpuDeviceCreateBuffer(ctx_->device, &desc);
    ctx_->check("materialize");
    WGPUCommandEncoder enc = ctx_->open_encoder();
    wgpuCommandEncoderCopyBufferToBuffer(enc, d->buffer(), 0, staging, 0, copy);
    ctx_->flush();
    struct Map {
      bool done = false;
      bool ok = false;
      std::string message;
    } map;
    WGPUBufferMapCallbackInfo cb{};
    cb.mode = WGPUCallbackMode_AllowProcessEvents;
    cb.callback = [](WGPUMapAsyncStatus status, WGPUStringView msg, void* user,
                     void*) {
      auto* m = static_cast<Map*>(user);
      m->ok = status == WGPUMapAsyncStatus_Success;
      m->message = to_string(msg);
      m->done = true;
    };
    cb.userdata1 = &map;
    wgpuBufferMapAsync(staging, WGPUMapMode_Read, 0, copy, cb);
    ctx_->wait(&map.done);
    if (!map.ok) {
      wgpuBufferRelease(staging);
      ctx_->check("materialize");
      throw BackendError(fmt::format(
          "webgpu backend: materialize could not map the readback of {}: {}",
          t.to_string(), map.message));
    }
    const void* p = wgpuBufferGetConstMappedRange(staging, 0, copy);
    std::memcpy(host->data(), p, n);
    wgpuBufferUnmap(staging);
    wgpuBufferRelease(staging);
    ctx_->check("materialize");
  }
  return HostBytes{std::shared_ptr<const void>(host, host->data()),
                   host->data(), n};
}

void Backend::release(Tensor& t) {
  // The buffer goes back to the pool when its last handle dies: this one
  // may be it.
  t = Tensor();
}

void Backend::set_persistent(const Tensor& t, bool persistent) {
  auto* d = static_cast<WebGpuData*>(t.data().get());
  std::lock_guard<std::mutex> lock(ctx_->mutex);
  if (d->persistent == persistent) return;
  d->persistent = persistent;
  if (persistent) {
    ctx_->stats.persistent_bytes += d->capacity();
  } else {
    ctx_->stats.persistent_bytes -= d->capacity();
  }
}

bool Backend::is_persistent(const Tensor& t) const {
  return static_cast<const WebGpuData*>(t.data().get())->persistent;
}

void Backend::trim() {
  ctx_->trim();
}

MemoryStats Backend::memory_stats() const {
  std::lock_guard<std::mutex> lock(ctx_->mutex);
  return ctx_->stats;
}

// --- Families not done yet ---------------------------------------------------

void Backend::conv2d(ConvOp op, const Tensor&, const Tensor&, const Tensor*,
                     const Conv2dParams&, Tensor&) {
  not_implemented(nascent::name(op));
}

void Backend::pool2d(PoolOp op, const Tensor&, const Tensor*,
                     const Pool2dParams&, Tensor&, Tensor*) {
  not_implemented(nascent::name(op));
}

void Backend::quant(QuantOp op, const Tensor*, std::span<const QuantArg>) {
  not_implemented(nascent::name(op));
}

}  // namespace nascent::webgpu
