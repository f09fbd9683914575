// copy (strided, with dtype conversion: the workhorse behind contiguous(),
// cast(), cat() and pad()), upload, fill and arange.
#include <cstring>

#include "nascent/backends/cuda/elementwise.cuh"

namespace nascent::cuda {

namespace {

template <class S, class D>
struct Convert {
  NASCENT_D D operator()(S v) const { return convert<D>(v); }
};

template <class U>
struct Identity {
  NASCENT_D U operator()(U v) const { return v; }
};

// Same dtype: bytes move, one kernel per element size. A contiguous pair is
// one cudaMemcpyAsync.
template <class U>
void copy_sized(Context& ctx, const Tensor& src, Tensor& dst) {
  map1<U, U>(ctx, "copy", src, dst, Identity<U>{});
}

// Up to 1 KiB of host bytes travel as a kernel argument: the upload is then
// asynchronous with nothing to stage or keep alive.
constexpr size_t kInlineBytes = 1024;
struct InlineBytes {
  unsigned char b[kInlineBytes];
};

__global__ void write_inline(unsigned char* dst, InlineBytes src, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src.b[i];
}

template <class T>
__global__ void fill_kernel(T* p, int64_t n, T v) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    p[i] = v;
  }
}

// arange: element i = a + i * b, exactly in int64 when both are integers
// (then converted as the CPU does), else in double.
template <class T>
__global__ void arange_kernel(T* p, int64_t n, bool exact, int64_t ia,
                              int64_t ib, double da, double db) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (exact) {
      p[i] = convert<T>(int64_t(uint64_t(ia) + uint64_t(i) * uint64_t(ib)));
    } else {
      p[i] = from_f64<T>(__dadd_rn(da, __dmul_rn(double(i), db)));
    }
  }
}

// The CPU's conversion of a fill value into T (core's from_double, or
// cpu::convert from int64 for integers).
template <class T>
T host_value(Scalar a) {
  if constexpr (std::is_same_v<T, float16>) {
    return to_float16(float(a.to_double()));
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return to_bfloat16(float(a.to_double()));
  } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (a.is_integral()) return T(a.to_int64());
    return nascent::from_double<T>(a.to_double());
  } else {
    return nascent::from_double<T>(a.to_double());
  }
}

}  // namespace

void Backend::copy(const Tensor& src, Tensor& dst) {
  DeviceGuard guard(ctx_->device);
  Context& ctx = *ctx_;
  if (dst.numel() == 0) return;
  if (src.dtype() == dst.dtype()) {
    if (src.is_contiguous() && dst.is_contiguous()) {
      check(cudaMemcpyAsync(byte_ptr(dst), byte_ptr(src),
                            size_t(dst.numel()) * dst.itemsize(),
                            cudaMemcpyDeviceToDevice, ctx.stream),
            "cudaMemcpyAsync (copy)");
      return;
    }
    switch (dst.itemsize()) {
      case 1:
        return copy_sized<uint8_t>(ctx, src, dst);
      case 2:
        return copy_sized<uint16_t>(ctx, src, dst);
      case 4:
        return copy_sized<uint32_t>(ctx, src, dst);
      default:
        return copy_sized<uint64_t>(ctx, src, dst);
    }
  }
  dispatch(src.dtype(), [&](auto stag) {
    using S = decltype(stag);
    dispatch(dst.dtype(), [&](auto dtag) {
      using D = decltype(dtag);
      if constexpr (!std::is_same_v<S, D>) {
        map1<S, D>(ctx, "copy", src, dst, Convert<S, D>{});
      }
    });
  });
}

std::shared_ptr<BackendData> Backend::upload(const void* host, size_t nbytes) {
  DeviceGuard guard(ctx_->device);
  auto data = std::make_shared<CudaData>(nbytes, ctx_);
  if (nbytes == 0) return data;
  if (nbytes <= kInlineBytes) {
    InlineBytes b;
    std::memcpy(b.b, host, nbytes);
    write_inline<<<1, 256, 0, ctx_->stream>>>(
        reinterpret_cast<unsigned char*>(data->bytes()), b, int(nbytes));
    check_launch("upload");
  } else {
    // From pageable memory the runtime stages the bytes before returning,
    // so the caller may free `host` at once.
    check(cudaMemcpyAsync(data->bytes(), host, nbytes, cudaMemcpyHostToDevice,
                          ctx_->stream),
          "cudaMemcpyAsync (upload)");
  }
  return data;
}

void Backend::create(CreationOp op, Scalar a, Scalar b, Tensor& out) {
  DeviceGuard guard(ctx_->device);
  const int64_t n = out.numel();
  if (n == 0) return;
  dispatch(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = data_ptr<T>(out);
    const unsigned grid = grid_for(n, 256, 4096);
    switch (op) {
      case CreationOp::fill:
        fill_kernel<T><<<grid, 256, 0, ctx_->stream>>>(p, n, host_value<T>(a));
        break;
      case CreationOp::arange:
        arange_kernel<T><<<grid, 256, 0, ctx_->stream>>>(
            p, n, a.is_integral() && b.is_integral(), a.to_int64(),
            b.to_int64(), a.to_double(), b.to_double());
        break;
    }
    check_launch(nascent::name(op));
  });
}

}  // namespace nascent::cuda
