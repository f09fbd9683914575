#include "nascent/backends/cuda/nccl.h"

#include <fmt/format.h>

#include "nascent/core/error.h"

#ifdef NASCENT_HAVE_NCCL

#include <nccl.h>

#include <cstdlib>
#include <cstring>

#include "nascent/backends/cuda/context.h"
#include "nascent/backends/cuda/libraries.h"
#include "nascent/core/forwarding.h"
#include "nascent/core/ops.h"

namespace nascent::cuda {

bool has_nccl() {
  return true;
}

namespace {

// clang-format off
#define NASCENT_NCCL_ENTRY_POINTS(X) \
  X(ncclGetVersion)                  \
  X(ncclGetUniqueId)                 \
  X(ncclGetErrorString)              \
  X(ncclCommInitRank)                \
  X(ncclCommDestroy)                 \
  X(ncclCommAbort)                   \
  X(ncclCommGetAsyncError)           \
  X(ncclAllReduce)                   \
  X(ncclBroadcast)                   \
  X(ncclAllGather)
// clang-format on

struct Nccl {
  NASCENT_NCCL_ENTRY_POINTS(NASCENT_ENTRY_POINT)
  std::string path, error;
  int count = 0;
};

Nccl load() {
  Nccl out;
  try {
    // Never freed: see SharedLibrary.
    auto* lib = new SharedLibrary(
        "libnccl.so.2", library_dirs(),
        "NCCL, which the CUDA backend's collectives (--distributed nccl) call");
    out.path = lib->path();
#define NASCENT_RESOLVE(f)                  \
  {                                         \
    void* p = lib->symbol(#f);              \
    std::memcpy(&out.f, &p, sizeof(out.f)); \
    ++out.count;                            \
  }
    NASCENT_NCCL_ENTRY_POINTS(NASCENT_RESOLVE)
#undef NASCENT_RESOLVE
  } catch (const BackendError& e) {
    out.error = e.what();
  }
  return out;
}

const Nccl& nccl() {
  static const Nccl loaded = load();
  if (!loaded.error.empty()) throw BackendError(loaded.error);
  return loaded;
}

void check_nccl(ncclResult_t r, const char* call) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  throw BackendError(fmt::format("dist (nccl): {} failed: {}", call,
                                 nccl().ncclGetErrorString(r)));
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32:
      return ncclFloat32;
    case DType::f16:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
    case DType::i32:
      return ncclInt32;
    default:
      return ncclUint8;  // Bytes: broadcast and all_gather only.
  }
}

class NcclCommunicator final : public dist::Communicator {
 public:
  NcclCommunicator(Backend& gpu, int rank, int world, const ncclUniqueId& id)
      : gpu_(gpu), rank_(rank), size_(world) {
    DeviceGuard device(gpu_.device());
    check_nccl(nccl().ncclCommInitRank(&comm_, world, id, rank),
               "ncclCommInitRank");
  }
  ~NcclCommunicator() override {
    if (comm_ != nullptr) {
      DeviceGuard device(gpu_.device());
      nccl().ncclCommDestroy(comm_);
    }
  }

  std::string name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int world_size() const override { return size_; }

  std::unique_ptr<dist::Work> all_reduce_async(const Tensor& x,
                                               dist::Reduction op) override {
    check_reduce(x, op);
    const Tensor in = on_gpu("all_reduce", x);
    auto [out, dst] = output(x.shape(), x);
    DeviceGuard device(gpu_.device());
    check_nccl(
        nccl().ncclAllReduce(
            byte_ptr(in), dst, size_t(x.numel()), nccl_type(x.dtype()),
            op == dist::Reduction::mean ? ncclAvg : ncclSum, comm_, stream()),
        "ncclAllReduce");
    return std::make_unique<dist::DoneWork>(std::move(out));
  }

  Tensor broadcast(const Tensor& x, int root) override {
    check("broadcast", x, false, root);
    const Tensor in = on_gpu("broadcast", x);
    auto [out, dst] = output(x.shape(), x);
    DeviceGuard device(gpu_.device());
    check_nccl(nccl().ncclBroadcast(byte_ptr(in), dst,
                                    size_t(x.numel()) * x.itemsize(), ncclUint8,
                                    root, comm_, stream()),
               "ncclBroadcast");
    return out;
  }

  Tensor all_gather(const Tensor& x) override {
    check("all_gather", x, false);
    const Tensor in = on_gpu("all_gather", x);
    Shape shape = x.shape();
    shape.insert(shape.begin(), size_);
    auto [out, dst] = output(shape, x);
    DeviceGuard device(gpu_.device());
    check_nccl(nccl().ncclAllGather(byte_ptr(in), dst,
                                    size_t(x.numel()) * x.itemsize(), ncclUint8,
                                    comm_, stream()),
               "ncclAllGather");
    return out;
  }

  void barrier() override {
    all_reduce(zeros({1}, gpu_, DType::i32));
    gpu_.synchronize();
    ncclResult_t async = ncclSuccess;
    check_nccl(nccl().ncclCommGetAsyncError(comm_, &async),
               "ncclCommGetAsyncError");
    check_nccl(async, "a collective");
  }

  [[noreturn]] void abort(int code) override {
    if (comm_ != nullptr) nccl().ncclCommAbort(comm_);
    comm_ = nullptr;
    std::_Exit(code);
  }

 private:
  cudaStream_t stream() const {
    return static_cast<cudaStream_t>(gpu_.native_stream());
  }
  // x contiguous, as the CUDA backend's own tensor (x may live on a
  // wrapper of it, such as autodiff's), checked to be on this GPU.
  Tensor on_gpu(const char* op, const Tensor& x) const {
    Tensor inner = innermost(x.contiguous());
    auto* d = dynamic_cast<CudaData*>(inner.data().get());
    if (d == nullptr || &d->context() != &gpu_.context()) {
      throw BackendError(fmt::format(
          "{} (nccl): {} lives on {}, not on {}, the GPU of this rank", op,
          x.to_string(), x.backend().name(), gpu_.name()));
    }
    return inner;
  }
  // A new tensor on x's backend and the device bytes NCCL writes it with.
  static std::pair<Tensor, std::byte*> output(const Shape& shape,
                                              const Tensor& x) {
    Tensor out = Tensor::empty(shape, x.dtype(), x.backend());
    return {out, byte_ptr(innermost(out))};
  }

  Backend& gpu_;
  int rank_, size_;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

std::string nccl_unique_id() {
  ncclUniqueId id;
  check_nccl(nccl().ncclGetUniqueId(&id), "ncclGetUniqueId");
  std::string hex;
  for (char c : id.internal) hex += fmt::format("{:02x}", uint8_t(c));
  return hex;
}

std::unique_ptr<dist::Communicator> make_nccl_communicator(
    Backend& gpu, int rank, int world_size, const std::string& id) {
  ncclUniqueId raw;
  if (id.size() != 2 * sizeof(raw.internal) ||
      id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw ValueError(fmt::format(
        "dist (nccl): the clique id must be {} lowercase hex digits "
        "(nccl_unique_id), got {} characters",
        2 * sizeof(raw.internal), id.size()));
  }
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw ValueError(
        fmt::format("dist (nccl): rank {} of {} ranks", rank, world_size));
  }
  for (size_t i = 0; i < sizeof(raw.internal); ++i) {
    raw.internal[i] = char(std::stoi(id.substr(2 * i, 2), nullptr, 16));
  }
  return std::make_unique<NcclCommunicator>(gpu, rank, world_size, raw);
}

NcclLibrary load_nccl_library() {
  const Nccl& n = nccl();
  NcclLibrary info;
  info.path = n.path;
  check_nccl(n.ncclGetVersion(&info.version), "ncclGetVersion");
  info.header_version = NCCL_VERSION_CODE;
  info.entry_points = n.count;
  return info;
}

}  // namespace nascent::cuda

#else

namespace nascent::cuda {

namespace {
[[noreturn]] void no_nccl() {
  throw BackendError(
      "dist (nccl): this build found no nccl.h beside the CUDA toolkit; "
      "install NCCL's development files and configure again");
}
}  // namespace

bool has_nccl() {
  return false;
}
std::string nccl_unique_id() {
  no_nccl();
}
std::unique_ptr<dist::Communicator> make_nccl_communicator(Backend&, int, int,
                                                           const std::string&) {
  no_nccl();
}
NcclLibrary load_nccl_library() {
  no_nccl();
}

}  // namespace nascent::cuda

#endif
