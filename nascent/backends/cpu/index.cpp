// gather, scatter_add and index_select. Core has range-checked every index
// and hands over i64 indices, so the kernels trust them.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/convert.h"
#include "nascent/backends/cpu/strided.h"
#include "nascent/backends/cpu/thread_pool.h"

namespace nascent::cpu {

namespace {

// Moving an element needs only its size, not its dtype: one instantiation
// per size instead of one per dtype.
template <class Fn>
void dispatch_size(size_t size, Fn&& fn) {
  switch (size) {
    case 1:
      return fn(uint8_t{});
    case 2:
      return fn(uint16_t{});
    case 4:
      return fn(uint32_t{});
    default:
      return fn(uint64_t{});
  }
}

// out[p] = x[p with p[axis] = index[p]] over out's shape. x's stride on
// `axis` is replaced by 0 and the index value picks the offset instead;
// idx_strides are the index's strides over out's shape (stride 0 on every
// axis but `axis` for index_select). Each output element is written once,
// so any split across threads is safe.
void gather_strided(const Tensor& x, int axis, const int64_t* idx,
                    const Strides& idx_strides, Tensor& out) {
  Strides xs = x.strides();
  const int64_t axis_stride = xs[size_t(axis)];
  xs[size_t(axis)] = 0;
  StridedLoop<3> loop(out.shape(), {out.strides(), idx_strides, xs});
  dispatch_size(out.itemsize(), [&](auto tag) {
    using U = decltype(tag);
    U* dst = data_ptr<U>(out);
    const U* src = data_ptr<U>(x);
    loop.parallel(kElementwiseGrain, [&](auto off, int64_t n, auto st) {
      U* d = dst + off[0];
      const int64_t* ip = idx + off[1];
      const U* s = src + off[2];
      // The two common runs, with constant strides the compiler can use:
      // along the indexed axis itself, and along a contiguous other axis.
      if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
        for (int64_t i = 0; i < n; ++i) d[i] = s[ip[i] * axis_stride];
      } else if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
        for (int64_t i = 0; i < n; ++i) d[i] = s[i + ip[i] * axis_stride];
      } else {
        for (int64_t i = 0; i < n; ++i) {
          d[i * st[0]] = s[i * st[2] + ip[i * st[1]] * axis_stride];
        }
      }
    });
  });
}

// index_select when the slice after `axis` is contiguous in x: every output
// row (one outer position, one index) is one memcpy. This is the embedding
// lookup: weight [V, D], axis 0, one row of D elements per id.
void select_rows(const Tensor& x, int axis, const Tensor& index, int64_t inner,
                 Tensor& out) {
  const Shape& shape = x.shape();
  const Strides& strides = x.strides();
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= shape[size_t(d)];
  const int64_t n = index.numel();
  const int64_t axis_stride = strides[size_t(axis)];
  const int64_t idx_stride = index.strides()[0];
  const int64_t* idx = data_ptr<int64_t>(index);
  const size_t size = x.itemsize();
  const size_t row_bytes = size_t(inner) * size;
  const std::byte* src = byte_ptr(x);
  std::byte* dst = byte_ptr(out);
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / inner);
  parallel_for(outer * n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      // Offset of the outer position r / n in x (x may be strided there).
      int64_t o = r / n, x_off = 0;
      for (int d = axis - 1; d >= 0; --d) {
        x_off += (o % shape[size_t(d)]) * strides[size_t(d)];
        o /= shape[size_t(d)];
      }
      x_off += idx[(r % n) * idx_stride] * axis_stride;
      std::memcpy(dst + size_t(r) * row_bytes, src + x_off * int64_t(size),
                  row_bytes);
    }
  });
}

void index_select(const Tensor& x, int axis, const Tensor& index, Tensor& out) {
  // Elements after `axis` and whether x stores them as one contiguous run.
  int64_t inner = 1;
  bool contiguous_inner = true;
  for (int d = x.ndim() - 1; d > axis; --d) {
    int64_t size = x.shape()[size_t(d)];
    if (size != 1 && x.strides()[size_t(d)] != inner) {
      contiguous_inner = false;
    }
    inner *= size;
  }
  // A row of one element is better served by the strided loop.
  if (contiguous_inner && inner > 1) {
    select_rows(x, axis, index, inner, out);
    return;
  }
  Strides idx_strides(size_t(out.ndim()), 0);
  idx_strides[size_t(axis)] = index.strides()[0];
  gather_strided(x, axis, data_ptr<int64_t>(index), idx_strides, out);
}

template <class T>
T add_wrapping(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Integer overflow wraps (as PyTorch) instead of being undefined.
    using U = std::make_unsigned_t<T>;
    return T(U(U(a) + U(b)));
  } else if constexpr (std::is_floating_point_v<T>) {
    return a + b;
  } else {
    return convert<T>(convert<float>(a) + convert<float>(b));
  }
}

// out[p with p[axis] = index[p]] += src[p]. Two positions of index can only
// hit the same output element when they agree on every axis but `axis`, so
// threads split the other axes and each walks the whole of `axis` in order:
// the sums come out the same for any thread count.
template <class T>
void scatter_add_typed(int axis, const Tensor& index, const Tensor& src,
                       Tensor& out) {
  const int64_t k_len = index.shape()[size_t(axis)];
  Shape outer = index.shape();
  outer[size_t(axis)] = 1;
  StridedLoop<3> loop(outer, {out.strides(), index.strides(), src.strides()});
  const int64_t out_ax = out.strides()[size_t(axis)];
  const int64_t idx_ax = index.strides()[size_t(axis)];
  const int64_t src_ax = src.strides()[size_t(axis)];
  T* dst = data_ptr<T>(out);
  const int64_t* idx = data_ptr<int64_t>(index);
  const T* sp = data_ptr<T>(src);
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / k_len);
  loop.parallel(grain, [&](auto off, int64_t n, auto st) {
    // k outside, the run inside: rows of a row-major out are read in order.
    for (int64_t k = 0; k < k_len; ++k) {
      T* d = dst + off[0];
      const int64_t* ip = idx + off[1] + k * idx_ax;
      const T* s = sp + off[2] + k * src_ax;
      for (int64_t i = 0; i < n; ++i) {
        T& o = d[i * st[0] + ip[i * st[1]] * out_ax];
        o = add_wrapping(o, s[i * st[2]]);
      }
    }
  });
}

}  // namespace

void Backend::index(IndexOp op, const Tensor& x, int axis, const Tensor& index,
                    const Tensor* src, Tensor& out) {
  switch (op) {
    case IndexOp::gather:
      gather_strided(x, axis, data_ptr<int64_t>(index), index.strides(), out);
      return;
    case IndexOp::index_select:
      index_select(x, axis, index, out);
      return;
    case IndexOp::scatter_add:
      dispatch_dtype(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_same_v<T, bool>) {
          throw BackendError("cpu: scatter_add does not take bool");
        } else {
          scatter_add_typed<T>(axis, index, *src, out);
        }
      });
      return;
  }
}

}  // namespace nascent::cpu
