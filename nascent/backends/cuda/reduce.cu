// Reductions, with the CPU backend's semantics (cpu/reduce.cpp): floating
// inputs accumulate in double (so f32 sums of millions stay exact to a few
// ulps), integers in wrapping int64; max and min propagate NaN; argmax and
// argmin take the first extreme (the first NaN wins) in row-major order of
// the reduced axes. var is three passes (a value of each group, the mean
// shifted by it, the squared deviations) and logsumexp two (the max, the sum
// of exp(x - max)), as on the CPU.
//
// The axes are split into kept and reduced ones and merged where x is
// contiguous across them. Two kernel shapes:
//  - rows: a block per output (and per chunk of a long reduction), threads
//    stride through the reduced elements: coalesced when the innermost
//    reduced axis is contiguous (sum over a row);
//  - columns: a thread per output when x's innermost axis is kept (sum over
//    a batch), so a warp reads neighbouring outputs' elements together.
// A long reduction with few outputs is split into chunks whose partial
// states a second kernel merges in order: results do not depend on timing.
#include <algorithm>
#include <cmath>

#include "nascent/backends/cuda/strided.cuh"

namespace nascent::cuda {

namespace {

constexpr int kBlock = 256;

// Axes of one side (kept or reduced), innermost first.
struct Dims {
  int n = 0;
  IntDivider div[kMaxDims];
  int64_t size[kMaxDims];
  int64_t stride[kMaxDims];
};

// x offset of index i over `d` (row-major). `big`: i may not fit 31 bits.
NASCENT_D int64_t dims_offset(const Dims& d, uint64_t i, bool big) {
  int64_t off = 0;
#pragma unroll
  for (int k = 0; k < kMaxDims; ++k) {
    if (k == d.n) break;
    if (k == d.n - 1) {  // The outermost axis takes what is left.
      off += int64_t(i) * d.stride[k];
      break;
    }
    uint64_t q, r;
    if (big) {
      q = i / uint64_t(d.size[k]);
      r = i - q * uint64_t(d.size[k]);
    } else {
      const uint32_t q32 = d.div[k].div(uint32_t(i));
      q = q32;
      r = uint32_t(i) - q32 * d.div[k].divisor;
    }
    off += int64_t(r) * d.stride[k];
    i = q;
  }
  return off;
}

enum Kind : int {
  kSum,
  kProd,
  kMax,
  kMin,
  kSumDev,
  kSumSqDev,
  kSumExpDev,
  kFirst
};
enum Post : int { kNone, kMean, kVar, kLogSumExp, kMeanUpdate };

// Floating x, double state.
template <class T>
struct FloatReduce {
  using State = double;
  int kind = kSum;
  const double* shift = nullptr;  // Per output; may be null.
  bool shift_finite = false;      // Shift by 0 where the shift is not finite.
  int post = kNone;
  const double* aux = nullptr;  // The max (logsumexp) or x0 (mean update).
  double count = 1, dof = 1;
  bool take_sqrt = false;
  void* out = nullptr;
  bool out_double = false;  // Scratch of doubles instead of T.

  NASCENT_D State identity() const {
    switch (kind) {
      case kMax:
        return -INFINITY;
      case kMin:
        return INFINITY;
      case kProd:
        return 1.0;
      default:
        return 0.0;
    }
  }
  NASCENT_D double context(int64_t o) const {
    if (shift == nullptr) return 0.0;
    const double s = shift[o];
    return shift_finite && !isfinite(s) ? 0.0 : s;
  }
  NASCENT_D State merge(State a, State b) const {
    switch (kind) {
      case kMax:
        return b > a || b != b ? b : a;
      case kMin:
        return b < a || b != b ? b : a;
      case kProd:
        return a * b;
      default:
        return a + b;
    }
  }
  NASCENT_D State visit(State acc, T x, int64_t r, double sh) const {
    const double v = to_f64(x);
    switch (kind) {
      case kSumDev:
        return acc + (v - sh);
      case kSumSqDev:
        return acc + (v - sh) * (v - sh);
      case kSumExpDev:
        return acc + ::exp(v - sh);
      case kFirst:
        return r == 0 ? v : acc;
      default:
        return merge(acc, v);
    }
  }
  NASCENT_D void write(int64_t o, State s) const {
    double v = s;
    switch (post) {
      case kMean:
        v = s / count;
        break;
      case kVar:
        v = s / dof;
        if (take_sqrt) v = ::sqrt(v);
        break;
      case kLogSumExp:
        v = isfinite(aux[o]) ? aux[o] + ::log(s) : aux[o];
        break;
      case kMeanUpdate:
        v = aux[o] + s / count;
        break;
      default:
        break;
    }
    if (out_double) {
      static_cast<double*>(out)[o] = v;
    } else {
      static_cast<T*>(out)[o] = from_f64<T>(v);
    }
  }
};

// Integers and bool: wrapping int64 sums and products, exact max and min.
template <class T>
struct IntReduce {
  using State = int64_t;
  int kind = kSum;
  void* out = nullptr;
  bool out_i64 = true;  // Else out has T's dtype (max, min).

  NASCENT_D State identity() const {
    switch (kind) {
      case kProd:
        return 1;
      case kMax:
        return INT64_MIN;
      case kMin:
        return INT64_MAX;
      default:
        return 0;
    }
  }
  NASCENT_D double context(int64_t) const { return 0.0; }
  NASCENT_D State merge(State a, State b) const {
    switch (kind) {
      case kProd:
        return int64_t(uint64_t(a) * uint64_t(b));
      case kMax:
        return a > b ? a : b;
      case kMin:
        return a < b ? a : b;
      default:
        return int64_t(uint64_t(a) + uint64_t(b));
    }
  }
  NASCENT_D State visit(State acc, T x, int64_t, double) const {
    return merge(acc, int64_t(x));
  }
  NASCENT_D void write(int64_t o, State s) const {
    if (out_i64) {
      static_cast<int64_t*>(out)[o] = s;
    } else {
      static_cast<T*>(out)[o] = convert<T>(s);
    }
  }
};

// argmax / argmin: (value, flat index). The order is total (NaN above
// everything, then by value, ties to the smaller index), so any merge tree
// gives the sequential answer.
template <class T>
struct ArgReduce {
  using V = std::conditional_t<is_float_v<T>, double, int64_t>;
  struct State {
    V v;
    int64_t i;  // -1: no element yet.
  };
  bool is_max = true;
  int64_t* out = nullptr;

  NASCENT_D State identity() const { return {V(0), -1}; }
  NASCENT_D double context(int64_t) const { return 0.0; }
  NASCENT_D bool before(const State& a, const State& b) const {
    // Whether a wins over b.
    if (b.i < 0) return true;
    if (a.i < 0) return false;
    if constexpr (is_float_v<T>) {
      const bool an = a.v != a.v, bn = b.v != b.v;
      if (an || bn) return an && (!bn || a.i < b.i);
    }
    if (a.v == b.v) return a.i < b.i;
    return is_max ? a.v > b.v : a.v < b.v;
  }
  NASCENT_D State merge(State a, State b) const { return before(a, b) ? a : b; }
  NASCENT_D State visit(State acc, T x, int64_t r, double) const {
    V v;
    if constexpr (is_float_v<T>) {
      v = to_f64(x);
    } else {
      v = V(x);
    }
    return merge(acc, State{v, r});
  }
  NASCENT_D void write(int64_t o, State s) const { out[o] = s.i; }
};

struct Geometry {
  Dims kept, red;
  int64_t num_out = 1, num_red = 1;
  bool big = false;  // num_red >= 2^31.
};

// A block per (output, chunk): threads stride through the chunk.
template <class T, class R>
__global__ void __launch_bounds__(kBlock)
    reduce_rows(const T* x, Geometry g, int64_t chunk, int64_t nchunks, R r,
                typename R::State* partial) {
  using State = typename R::State;
  __shared__ State smem[kBlock];
  const int64_t tasks = g.num_out * nchunks;
  for (int64_t t = blockIdx.x; t < tasks; t += gridDim.x) {
    const int64_t o = t / nchunks, c = t % nchunks;
    const int64_t base = dims_offset(g.kept, uint64_t(o), false);
    const double sh = r.context(o);
    State acc = r.identity();
    const int64_t end = min(g.num_red, (c + 1) * chunk);
    for (int64_t i = c * chunk + threadIdx.x; i < end; i += kBlock) {
      acc =
          r.visit(acc, x[base + dims_offset(g.red, uint64_t(i), g.big)], i, sh);
    }
    smem[threadIdx.x] = acc;
    __syncthreads();
    for (int s = kBlock / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) {
        smem[threadIdx.x] = r.merge(smem[threadIdx.x], smem[threadIdx.x + s]);
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      if (nchunks == 1) {
        r.write(o, smem[0]);
      } else {
        partial[t] = smem[0];
      }
    }
    __syncthreads();
  }
}

// A thread per output, blockIdx.y per chunk of the reduction.
template <class T, class R>
__global__ void __launch_bounds__(kBlock)
    reduce_cols(const T* x, Geometry g, int64_t chunk, int64_t nchunks, R r,
                typename R::State* partial) {
  using State = typename R::State;
  const int64_t c = blockIdx.y;
  for (int64_t o = int64_t(blockIdx.x) * kBlock + threadIdx.x; o < g.num_out;
       o += int64_t(gridDim.x) * kBlock) {
    const int64_t base = dims_offset(g.kept, uint64_t(o), false);
    const double sh = r.context(o);
    State acc = r.identity();
    const int64_t end = min(g.num_red, (c + 1) * chunk);
    // Eight loads in flight before they are visited in order: a thread's
    // dependent loads one at a time cost a memory latency each (a bias
    // gradient's 256 of them took 130 us on the H200).
    int64_t i = c * chunk;
    for (; i + 8 <= end; i += 8) {
      T v[8];
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        v[k] = x[base + dims_offset(g.red, uint64_t(i + k), g.big)];
      }
#pragma unroll
      for (int k = 0; k < 8; ++k) acc = r.visit(acc, v[k], i + k, sh);
    }
    for (; i < end; ++i) {
      acc =
          r.visit(acc, x[base + dims_offset(g.red, uint64_t(i), g.big)], i, sh);
    }
    if (nchunks == 1) {
      r.write(o, acc);
    } else {
      partial[o * nchunks + c] = acc;
    }
  }
}

// Merges each output's partial states in chunk order.
template <class R>
__global__ void reduce_partials(const typename R::State* partial,
                                int64_t num_out, int64_t nchunks, R r) {
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < num_out;
       o += int64_t(gridDim.x) * blockDim.x) {
    typename R::State s = partial[o * nchunks];
    for (int64_t c = 1; c < nchunks; ++c) {
      s = r.merge(s, partial[o * nchunks + c]);
    }
    r.write(o, s);
  }
}

void fill_dims(Dims& d, const Shape& sizes, const Strides& strides) {
  // sizes/strides outermost first; Dims wants innermost first.
  d.n = int(sizes.size());
  for (int k = 0; k < d.n; ++k) {
    const size_t src = size_t(d.n - 1 - k);
    d.size[k] = sizes[src];
    d.stride[k] = strides[src];
    // A size-0 axis (an empty reduction) is never divided by.
    d.div[k] =
        IntDivider(uint32_t(std::clamp<int64_t>(sizes[src], 1, INT32_MAX)));
  }
}

// Drops size-1 axes and merges neighbours contiguous in x (no axis left
// for an all-size-1 list: its product is 1 either way).
void merge_axes(Shape& sizes, Strides& strides) {
  Collapsed<1> c = collapse<1>(sizes, {&strides}, false);
  sizes = std::move(c.shape);
  strides = std::move(c.strides[0]);
}

struct Plan {
  Geometry g;
  bool columns = false;  // The column kernel fits.
};

Plan make_plan(const Tensor& x, const std::vector<int>& axes) {
  Shape ks, rs;
  Strides kx, rx;
  for (int d = 0; d < x.ndim(); ++d) {
    const bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    (reduced ? rs : ks).push_back(x.shape()[size_t(d)]);
    (reduced ? rx : kx).push_back(x.strides()[size_t(d)]);
  }
  Plan p;
  p.g.num_out = numel(ks);
  p.g.num_red = numel(rs);
  merge_axes(ks, kx);
  merge_axes(rs, rx);
  if (ks.size() > size_t(kMaxDims) || rs.size() > size_t(kMaxDims)) {
    throw BackendError("cuda: reduce: more than 8 axes remain after merging");
  }
  if (p.g.num_out > kMaxLaunchElements) {
    throw BackendError("cuda: reduce: more than 2^31 outputs");
  }
  fill_dims(p.g.kept, ks, kx);
  fill_dims(p.g.red, rs, rx);
  p.g.big = p.g.num_red > kMaxLaunchElements;
  // Columns: x's innermost kept axis is contiguous and no reduced axis is.
  bool red_unit = false;
  for (int64_t s : rx) red_unit = red_unit || s == 1 || s == -1;
  p.columns = !kx.empty() && (kx.back() == 1 || kx.back() == -1) && !red_unit;
  return p;
}

template <class T, class R>
void run(Context& ctx, const Tensor& x, const Plan& p, R r, Backend& backend) {
  using State = typename R::State;
  const Geometry& g = p.g;
  if (g.num_out == 0) return;
  const T* px = data_ptr<T>(x);
  const int64_t target = int64_t(ctx.sm_count) * 8;  // Blocks to fill.
  int64_t nchunks = 1;
  if (p.columns) {
    const int64_t col_blocks = (g.num_out + kBlock - 1) / kBlock;
    // Chunks of at least 64 rows: few outputs (a bias gradient's 10-128
    // columns of 256 rows) still spread over several blocks.
    if (col_blocks < target && g.num_red > 64) {
      nchunks = std::min((target + col_blocks - 1) / col_blocks,
                         (g.num_red + 63) / 64);
    }
  } else if (g.num_out < target && g.num_red > 4096) {
    nchunks = std::min((target + g.num_out - 1) / g.num_out,
                       (g.num_red + 4095) / 4096);
  }
  const int64_t chunk = (g.num_red + nchunks - 1) / nchunks;
  Tensor partial;
  State* pp = nullptr;
  if (nchunks > 1) {
    partial = scratch(backend, {int64_t(g.num_out * nchunks * sizeof(State))},
                      DType::u8);
    pp = reinterpret_cast<State*>(data_ptr<uint8_t>(partial));
  }
  if (p.columns) {
    dim3 grid(grid_for(g.num_out, kBlock, 65535), unsigned(nchunks));
    reduce_cols<T>
        <<<grid, kBlock, 0, ctx.stream>>>(px, g, chunk, nchunks, r, pp);
  } else {
    const int64_t tasks = g.num_out * nchunks;
    reduce_rows<T><<<unsigned(std::min<int64_t>(tasks, 1 << 20)), kBlock, 0,
                     ctx.stream>>>(px, g, chunk, nchunks, r, pp);
  }
  check_launch("reduce");
  if (nchunks > 1) {
    reduce_partials<<<grid_for(g.num_out, 256, 4096), 256, 0, ctx.stream>>>(
        pp, g.num_out, nchunks, r);
    check_launch("reduce");
  }
}

}  // namespace

void Backend::reduce(ReduceOp op, const Tensor& x, const std::vector<int>& axes,
                     const ReduceParams& params, Tensor& out) {
  DeviceGuard guard(ctx_->device);
  Context& ctx = *ctx_;
  if (out.numel() == 0) return;
  const Plan p = make_plan(x, axes);
  const int64_t n_out = p.g.num_out;
  dispatch(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (op == ReduceOp::argmax || op == ReduceOp::argmin) {
      ArgReduce<T> r;
      r.is_max = op == ReduceOp::argmax;
      r.out = data_ptr<int64_t>(out);
      return run<T>(ctx, x, p, r, *this);
    }
    if constexpr (!is_float_v<T>) {
      IntReduce<T> r;
      r.kind = op == ReduceOp::prod  ? kProd
               : op == ReduceOp::max ? kMax
               : op == ReduceOp::min ? kMin
                                     : kSum;
      r.out = out.data() ? static_cast<void*>(byte_ptr(out)) : nullptr;
      r.out_i64 = out.dtype() == DType::i64;
      return run<T>(ctx, x, p, r, *this);
    } else {
      FloatReduce<T> r;
      r.out = byte_ptr(out);
      r.count = double(p.g.num_red);
      auto pass = [&](int kind, const double* shift, bool finite, int post,
                      const double* aux, Tensor* dst) {
        FloatReduce<T> q = r;
        q.kind = kind;
        q.shift = shift;
        q.shift_finite = finite;
        q.post = post;
        q.aux = aux;
        if (dst != nullptr) {
          q.out = data_ptr<double>(*dst);
          q.out_double = true;
        }
        run<T>(ctx, x, p, q, *this);
      };
      switch (op) {
        case ReduceOp::sum:
          return pass(kSum, nullptr, false, kNone, nullptr, nullptr);
        case ReduceOp::prod:
          return pass(kProd, nullptr, false, kNone, nullptr, nullptr);
        case ReduceOp::max:
          return pass(kMax, nullptr, false, kNone, nullptr, nullptr);
        case ReduceOp::min:
          return pass(kMin, nullptr, false, kNone, nullptr, nullptr);
        case ReduceOp::mean:
          return pass(kSum, nullptr, false, kMean, nullptr, nullptr);
        case ReduceOp::var: {
          Tensor x0 = scratch(*this, {n_out}, DType::f64);
          Tensor mean = scratch(*this, {n_out}, DType::f64);
          pass(kFirst, nullptr, false, kNone, nullptr, &x0);
          const double* px0 = data_ptr<double>(x0);
          pass(kSumDev, px0, false, kMeanUpdate, px0, &mean);
          r.dof = std::max(0.0, r.count - double(params.correction));
          r.take_sqrt = params.take_sqrt;
          return pass(kSumSqDev, data_ptr<double>(mean), false, kVar, nullptr,
                      nullptr);
        }
        case ReduceOp::logsumexp: {
          Tensor m = scratch(*this, {n_out}, DType::f64);
          pass(kMax, nullptr, false, kNone, nullptr, &m);
          const double* pm = data_ptr<double>(m);
          return pass(kSumExpDev, pm, true, kLogSumExp, pm, nullptr);
        }
        case ReduceOp::argmax:
        case ReduceOp::argmin:
          return;  // Handled above.
      }
    }
  });
}

}  // namespace nascent::cuda
