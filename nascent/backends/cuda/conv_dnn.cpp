// conv2d and its two gradients through cuDNN's convolution API (f32, NCHW,
// any stride, padding, dilation and groups). For each shape an algorithm is
// chosen once from cuDNN's heuristics (what PyTorch does unless told to
// benchmark) and kept with the shape's descriptors; its workspace comes
// from the caching allocator. libcudnn is opened with dlopen the first
// time a conv asks for it, not at startup. Without cuDNN at build time
// (CMake's NASCENT_CUDNN) this file only declines, and conv.cu takes im2col.
#include "nascent/backends/cuda/conv_dnn.h"

#include "nascent/backends/cuda/libraries.h"

#if NASCENT_HAVE_CUDNN

#include <cudnn.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace nascent::cuda {

namespace {

// The cuDNN functions the backend calls, X(name) each; opened with
// dlopen on first use like cuBLASLt (libraries.h).
// clang-format off
#define NASCENT_CUDNN_ENTRY_POINTS(X)              \
  X(cudnnGetVersion)                               \
  X(cudnnGetErrorString)                           \
  X(cudnnCreate)                                   \
  X(cudnnDestroy)                                  \
  X(cudnnSetStream)                                \
  X(cudnnCreateTensorDescriptor)                   \
  X(cudnnDestroyTensorDescriptor)                  \
  X(cudnnSetTensor4dDescriptor)                    \
  X(cudnnCreateFilterDescriptor)                   \
  X(cudnnDestroyFilterDescriptor)                  \
  X(cudnnSetFilter4dDescriptor)                    \
  X(cudnnCreateConvolutionDescriptor)              \
  X(cudnnDestroyConvolutionDescriptor)             \
  X(cudnnSetConvolution2dDescriptor)               \
  X(cudnnSetConvolutionGroupCount)                 \
  X(cudnnSetConvolutionMathType)                   \
  X(cudnnGetConvolutionForwardAlgorithm_v7)        \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)   \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7) \
  X(cudnnConvolutionForward)                       \
  X(cudnnConvolutionBackwardData)                  \
  X(cudnnConvolutionBackwardFilter)
// clang-format on

struct Cudnn {
  NASCENT_CUDNN_ENTRY_POINTS(NASCENT_ENTRY_POINT)
};

struct LoadedCudnn {
  Cudnn table;
  std::string error;  // Non-empty when loading failed.
  std::string path;
};

std::string cudnn_soname() {
  return fmt::format("libcudnn.so.{}", CUDNN_MAJOR);
}

LoadedCudnn load_cudnn() {
  LoadedCudnn out;
  try {
    // Never freed, like cuBLASLt's (libraries.h).
    auto* lib = new SharedLibrary(cudnn_soname(), library_dirs(),
                                  "cuDNN, asked for by NASCENT_CUDA_CONV");
    out.path = lib->path();
#define NASCENT_RESOLVE(f)                              \
  {                                                     \
    void* p = lib->symbol(#f);                          \
    std::memcpy(&out.table.f, &p, sizeof(out.table.f)); \
  }
    NASCENT_CUDNN_ENTRY_POINTS(NASCENT_RESOLVE)
#undef NASCENT_RESOLVE
  } catch (const BackendError& e) {
    out.table = Cudnn{};
    out.error = e.what();
  }
  return out;
}

const LoadedCudnn& loaded_cudnn() {
  static const LoadedCudnn loaded = load_cudnn();
  return loaded;
}

// The entry points; called only once state() found them loaded.
const Cudnn& api() {
  return loaded_cudnn().table;
}

// Workspaces above this are not worth their memory here.
constexpr size_t kMaxWorkspace = size_t(512) << 20;

struct Plan {
  bool ok = false;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int algo = 0;
  size_t workspace = 0;
};

struct DnnState {
  cudnnHandle_t handle = nullptr;
  bool usable = false;
  std::mutex mutex;  // One call at a time on the handle and the plans.
  std::map<std::vector<int64_t>, Plan> plans;

  ~DnnState() {
    for (auto& [key, p] : plans) {
      if (p.x) api().cudnnDestroyTensorDescriptor(p.x);
      if (p.y) api().cudnnDestroyTensorDescriptor(p.y);
      if (p.w) api().cudnnDestroyFilterDescriptor(p.w);
      if (p.conv) api().cudnnDestroyConvolutionDescriptor(p.conv);
    }
    if (handle != nullptr) api().cudnnDestroy(handle);
  }
};

bool ok(cudnnStatus_t s) {
  return s == CUDNN_STATUS_SUCCESS;
}

void check_dnn(cudnnStatus_t s, const char* what) {
  if (!ok(s)) {
    throw BackendError(std::string("cuda: ") + what + ": " +
                       api().cudnnGetErrorString(s));
  }
}

DnnState& state(Context& ctx) {
  std::lock_guard<std::mutex> lock(ctx.mutex);
  if (!ctx.dnn) {
    auto s = std::make_shared<DnnState>();
    // A machine with the headers but a broken or missing runtime library
    // (its engines are loaded lazily) keeps the im2col path.
    const LoadedCudnn& lib = loaded_cudnn();
    if (!lib.error.empty()) {
      std::fprintf(stderr,
                   "nascent: %s\nnascent: conv2d uses im2col + "
                   "cuBLASLt\n",
                   lib.error.c_str());
    } else if (ok(api().cudnnCreate(&s->handle))) {
      s->usable = ok(api().cudnnSetStream(s->handle, ctx.stream));
    } else {
      s->handle = nullptr;
      std::fprintf(stderr,
                   "nascent: cuDNN could not be initialised; conv2d uses "
                   "im2col + cuBLASLt\n");
    }
    ctx.dnn = s;
  }
  return *static_cast<DnnState*>(ctx.dnn.get());
}

// Algorithms whose f32 results stray further from a direct sum than the
// backend's tolerances allow (FFT, Winograd over 4x4 tiles), or whose
// result depends on timing (atomics), are skipped.
bool wanted(cudnnConvolutionFwdAlgo_t a) {
  return a != CUDNN_CONVOLUTION_FWD_ALGO_FFT &&
         a != CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool wanted(cudnnConvolutionBwdDataAlgo_t a) {
  return a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT &&
         a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool wanted(cudnnConvolutionBwdFilterAlgo_t a) {
  return a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT &&
         a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

// The first of cuDNN's ranked candidates that ran its check, is wanted,
// deterministic and fits the workspace limit; without TF32 only plain FMA
// candidates (the descriptor keeps CUDNN_FMA_MATH).
template <class Perf>
bool pick(const std::vector<Perf>& perf, int count, bool tf32, Plan& p) {
  for (int i = 0; i < count; ++i) {
    const Perf& r = perf[size_t(i)];
    if (ok(r.status) && wanted(r.algo) &&
        r.determinism == CUDNN_DETERMINISTIC && r.memory <= kMaxWorkspace &&
        (tf32 || r.mathType == CUDNN_FMA_MATH ||
         r.mathType == CUDNN_DEFAULT_MATH)) {
      p.algo = int(r.algo);
      p.workspace = r.memory;
      return !tf32 || ok(api().cudnnSetConvolutionMathType(p.conv, r.mathType));
    }
  }
  return false;
}

bool choose(cudnnHandle_t h, ConvOp op, bool tf32, Plan& p) {
  int count = 0;
  switch (op) {
    case ConvOp::conv2d: {
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(
          CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
      return ok(api().cudnnGetConvolutionForwardAlgorithm_v7(
                 h, p.x, p.w, p.conv, p.y, int(perf.size()), &count,
                 perf.data())) &&
             pick(perf, count, tf32, p);
    }
    case ConvOp::conv2d_backward_input: {
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(
          CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
      return ok(api().cudnnGetConvolutionBackwardDataAlgorithm_v7(
                 h, p.w, p.y, p.conv, p.x, int(perf.size()), &count,
                 perf.data())) &&
             pick(perf, count, tf32, p);
    }
    case ConvOp::conv2d_backward_weight: {
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(
          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
      return ok(api().cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                 h, p.x, p.y, p.conv, p.w, int(perf.size()), &count,
                 perf.data())) &&
             pick(perf, count, tf32, p);
    }
  }
  return false;
}

// Descriptors and algorithm for one shape; p.ok false when cuDNN has none.
void make_plan(cudnnHandle_t h, ConvOp op, const ConvShape& s, bool tf32,
               Plan& p) {
  for (int64_t v : {s.n, s.c, s.h, s.w, s.o, s.oh, s.ow}) {
    if (v <= 0 || v > INT_MAX / 4) return;
  }
  if (s.n * s.c * s.h * s.w > INT_MAX || s.n * s.o * s.oh * s.ow > INT_MAX) {
    return;
  }
  if (!ok(api().cudnnCreateTensorDescriptor(&p.x)) ||
      !ok(api().cudnnCreateTensorDescriptor(&p.y)) ||
      !ok(api().cudnnCreateFilterDescriptor(&p.w)) ||
      !ok(api().cudnnCreateConvolutionDescriptor(&p.conv))) {
    return;
  }
  const cudnnDataType_t f = CUDNN_DATA_FLOAT;
  if (!ok(api().cudnnSetTensor4dDescriptor(p.x, CUDNN_TENSOR_NCHW, f, int(s.n),
                                           int(s.c), int(s.h), int(s.w))) ||
      !ok(api().cudnnSetTensor4dDescriptor(p.y, CUDNN_TENSOR_NCHW, f, int(s.n),
                                           int(s.o), int(s.oh), int(s.ow))) ||
      !ok(api().cudnnSetFilter4dDescriptor(p.w, f, CUDNN_TENSOR_NCHW, int(s.o),
                                           int(s.c / s.groups), int(s.kh),
                                           int(s.kw))) ||
      !ok(api().cudnnSetConvolution2dDescriptor(
          p.conv, int(s.ph), int(s.pw), int(s.sh), int(s.sw), int(s.dh),
          int(s.dw), CUDNN_CROSS_CORRELATION, f)) ||
      !ok(api().cudnnSetConvolutionGroupCount(p.conv, int(s.groups))) ||
      // TF32 tensor cores only when the backend allows them.
      !ok(api().cudnnSetConvolutionMathType(
          p.conv, tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH))) {
    return;
  }
  p.ok = choose(h, op, tf32, p);
}

// cuDNN is opt-in (NASCENT_CUDA_CONV=cudnn): through its legacy API it
// lost to im2col + cuBLASLt on the CNN's layers on the H200 (30-80 us of
// host time a call against 15-30, and slower weight gradients among the
// deterministic algorithms; bench/NOTES.md).
bool dnn_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("NASCENT_CUDA_CONV");
    return v != nullptr && std::strcmp(v, "cudnn") == 0;
  }();
  return on;
}

}  // namespace

bool dnn_conv2d(Backend& backend, Context& ctx, ConvOp op, const Tensor& a,
                const Tensor& b, const ConvShape& s, Tensor& out) {
  if (out.dtype() != DType::f32 || !dnn_enabled()) return false;
  DnnState& st = state(ctx);
  if (!st.usable) return false;
  std::lock_guard<std::mutex> lock(st.mutex);
  const std::vector<int64_t> key{
      int64_t(op), s.n,  s.c,  s.h,  s.w,      s.o,
      s.kh,        s.kw, s.oh, s.ow, s.sh,     s.sw,
      s.ph,        s.pw, s.dh, s.dw, s.groups, int64_t(ctx.allow_tf32)};
  auto [it, fresh] = st.plans.try_emplace(key);
  Plan& p = it->second;
  if (fresh) make_plan(st.handle, op, s, ctx.allow_tf32, p);
  if (!p.ok) return false;
  Tensor ws;
  void* pws = nullptr;
  if (p.workspace > 0) {
    ws = scratch(backend, {int64_t(p.workspace)}, DType::u8);
    pws = byte_ptr(ws);
  }
  const float one = 1.0f, zero = 0.0f;
  switch (op) {
    case ConvOp::conv2d:
      check_dnn(api().cudnnConvolutionForward(
                    st.handle, &one, p.x, byte_ptr(a), p.w, byte_ptr(b), p.conv,
                    cudnnConvolutionFwdAlgo_t(p.algo), pws, p.workspace, &zero,
                    p.y, byte_ptr(out)),
                "cudnnConvolutionForward");
      break;
    case ConvOp::conv2d_backward_input:
      check_dnn(api().cudnnConvolutionBackwardData(
                    st.handle, &one, p.w, byte_ptr(b), p.y, byte_ptr(a), p.conv,
                    cudnnConvolutionBwdDataAlgo_t(p.algo), pws, p.workspace,
                    &zero, p.x, byte_ptr(out)),
                "cudnnConvolutionBackwardData");
      break;
    case ConvOp::conv2d_backward_weight:
      check_dnn(api().cudnnConvolutionBackwardFilter(
                    st.handle, &one, p.x, byte_ptr(a), p.y, byte_ptr(b), p.conv,
                    cudnnConvolutionBwdFilterAlgo_t(p.algo), pws, p.workspace,
                    &zero, p.w, byte_ptr(out)),
                "cudnnConvolutionBackwardFilter");
      break;
  }
  return true;
}

std::vector<LibraryInfo> load_cudnn_library() {
  const LoadedCudnn& lib = loaded_cudnn();
  if (!lib.error.empty()) throw BackendError(lib.error);
  LibraryInfo info;
  info.soname = cudnn_soname();
  info.path = lib.path;
#define NASCENT_NAME(f) \
  if (lib.table.f != nullptr) info.functions.push_back(#f);
  NASCENT_CUDNN_ENTRY_POINTS(NASCENT_NAME)
#undef NASCENT_NAME
  info.version = lib.table.cudnnGetVersion();
  info.header_version = CUDNN_VERSION;
  return {info};
}

}  // namespace nascent::cuda

#else

namespace nascent::cuda {

std::vector<LibraryInfo> load_cudnn_library() {
  return {};
}

bool dnn_conv2d(Backend&, Context&, ConvOp, const Tensor&, const Tensor&,
                const ConvShape&, Tensor&) {
  return false;
}

}  // namespace nascent::cuda

#endif
