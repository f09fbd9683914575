// gather, index_select and scatter_add (cpu/index.cpp's semantics). Core
// has range-checked every index and hands over i64 indices.
//
// gather and index_select are one strided kernel over the output: x's
// stride on `axis` is replaced by 0 and the index value picks the offset.
// scatter_add gives each thread one position of the non-indexed axes and
// walks the indexed axis in order: two index positions can only meet in the
// same output element when they agree on every other axis, so there is no
// race and no atomic, and the sums come out in the CPU's order (bit-exact).
#include "nascent/backends/cuda/strided.cuh"

namespace nascent::cuda {

namespace {

template <class U>
__global__ void gather_kernel(const U* x, const int64_t* idx, U* y,
                              StridedParams<3> p, uint32_t n,
                              int64_t axis_stride) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x) {
    int64_t off[3];
    strided_offsets(p, i, off);
    y[off[0]] = x[off[2] + idx[off[1]] * axis_stride];
  }
}

template <class U>
void gather_sized(Context& ctx, const Tensor& x, int axis, const Tensor& index,
                  const Strides& idx_strides, Tensor& out) {
  Strides xs = x.strides();
  const int64_t axis_stride = xs[size_t(axis)];
  xs[size_t(axis)] = 0;
  Collapsed<3> c =
      collapse<3>(out.shape(), {&out.strides(), &idx_strides, &xs});
  const U* px = data_ptr<U>(x);
  const int64_t* pi = data_ptr<int64_t>(index);
  U* py = data_ptr<U>(out);
  for_each_launch<3>(
      c, {0, 0, 0}, [&](const StridedParams<3>& p, auto o, int64_t n) {
        gather_kernel<<<grid_for(n, 256, 65536), 256, 0, ctx.stream>>>(
            px + o[2], pi + o[1], py + o[0], p, uint32_t(n), axis_stride);
        check_launch("gather");
      });
}

void gather(Context& ctx, const Tensor& x, int axis, const Tensor& index,
            const Strides& idx_strides, Tensor& out) {
  if (out.numel() == 0) return;
  switch (out.itemsize()) {
    case 1:
      return gather_sized<uint8_t>(ctx, x, axis, index, idx_strides, out);
    case 2:
      return gather_sized<uint16_t>(ctx, x, axis, index, idx_strides, out);
    case 4:
      return gather_sized<uint32_t>(ctx, x, axis, index, idx_strides, out);
    default:
      return gather_sized<uint64_t>(ctx, x, axis, index, idx_strides, out);
  }
}

template <class T>
NASCENT_D T add_wrapping(T a, T b) {
  if constexpr (is_half_v<T>) {
    return convert<T>(convert<float>(a) + convert<float>(b));
  } else {
    return wrap_add(a, b);
  }
}

template <class T>
__global__ void scatter_add_kernel(T* out, const int64_t* idx, const T* src,
                                   StridedParams<3> p, uint32_t n,
                                   int64_t k_len, int64_t out_ax,
                                   int64_t idx_ax, int64_t src_ax) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x) {
    int64_t off[3];
    strided_offsets(p, i, off);
    for (int64_t k = 0; k < k_len; ++k) {
      T& o = out[off[0] + idx[off[1] + k * idx_ax] * out_ax];
      o = add_wrapping(o, src[off[2] + k * src_ax]);
    }
  }
}

template <class T>
void scatter_add(Context& ctx, int axis, const Tensor& index, const Tensor& src,
                 Tensor& out) {
  const int64_t k_len = index.shape()[size_t(axis)];
  Shape outer = index.shape();
  outer[size_t(axis)] = 1;
  Collapsed<3> c =
      collapse<3>(outer, {&out.strides(), &index.strides(), &src.strides()});
  T* po = data_ptr<T>(out);
  const int64_t* pi = data_ptr<int64_t>(index);
  const T* ps = data_ptr<T>(src);
  const int64_t out_ax = out.strides()[size_t(axis)];
  const int64_t idx_ax = index.strides()[size_t(axis)];
  const int64_t src_ax = src.strides()[size_t(axis)];
  for_each_launch<3>(
      c, {0, 0, 0}, [&](const StridedParams<3>& p, auto o, int64_t n) {
        scatter_add_kernel<T><<<grid_for(n, 128, 65536), 128, 0, ctx.stream>>>(
            po + o[0], pi + o[1], ps + o[2], p, uint32_t(n), k_len, out_ax,
            idx_ax, src_ax);
        check_launch("scatter_add");
      });
}

}  // namespace

void Backend::index(IndexOp op, const Tensor& x, int axis, const Tensor& index,
                    const Tensor* src, Tensor& out) {
  DeviceGuard guard(ctx_->device);
  Context& ctx = *ctx_;
  switch (op) {
    case IndexOp::gather:
      return gather(ctx, x, axis, index, index.strides(), out);
    case IndexOp::index_select: {
      Strides idx_strides(size_t(out.ndim()), 0);
      idx_strides[size_t(axis)] = index.strides()[0];
      return gather(ctx, x, axis, index, idx_strides, out);
    }
    case IndexOp::scatter_add:
      if (index.numel() == 0) return;
      dispatch(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_same_v<T, bool>) {
          unsupported("scatter_add", out);
        } else {
          scatter_add<T>(ctx, axis, index, *src, out);
        }
      });
      return;
  }
}

}  // namespace nascent::cuda
