// cumsum, with the CPU backend's semantics (cpu/scan.cpp): floating sums
// run in double and each output is rounded once; integers and bool sum in
// wrapping int64. A thread scans one line along the axis; neighbouring
// threads take neighbouring lines, which is coalesced when the axis is not
// the innermost one (a scan over the batch). A long scan of few lines (the
// innermost axis) is latency-bound here; a block-wide scan would fix that
// when a model needs it.
#include "nascent/backends/cuda/strided.cuh"

namespace nascent::cuda {

namespace {

template <class S, class D>
__global__ void cumsum_lines(const S* x, D* y, StridedParams<2> p,
                             uint32_t lines, int64_t len, int64_t xs,
                             int64_t ys) {
  for (uint32_t l = blockIdx.x * blockDim.x + threadIdx.x; l < lines;
       l += gridDim.x * blockDim.x) {
    int64_t off[2];
    strided_offsets(p, l, off);
    const S* xl = x + off[1];
    D* yl = y + off[0];
    if constexpr (is_float_v<S>) {
      double acc = 0.0;
      for (int64_t i = 0; i < len; ++i) {
        acc += to_f64(xl[i * xs]);
        yl[i * ys] = from_f64<D>(acc);
      }
    } else {
      uint64_t acc = 0;
      for (int64_t i = 0; i < len; ++i) {
        acc += uint64_t(int64_t(xl[i * xs]));
        yl[i * ys] = convert<D>(int64_t(acc));
      }
    }
  }
}

}  // namespace

void Backend::scan(ScanOp op, const Tensor& x, int axis, Tensor& out) {
  DeviceGuard guard(ctx_->device);
  switch (op) {
    case ScanOp::cumsum:
      break;
  }
  if (out.numel() == 0) return;
  const common::ScanLines geo = common::scan_lines(x, axis, out);
  const int64_t len = geo.len, xs = geo.xs, ys = geo.os;
  const Collapsed<2>& c = geo.lines;
  dispatch(x.dtype(), [&](auto xtag) {
    using S = decltype(xtag);
    dispatch(out.dtype(), [&](auto ytag) {
      using D = decltype(ytag);
      constexpr bool ok =
          is_float_v<S> ? std::is_same_v<S, D> : std::is_same_v<D, int64_t>;
      if constexpr (ok) {
        const S* px = data_ptr<S>(x);
        D* py = data_ptr<D>(out);
        for_each_launch<2>(
            c, {0, 0}, [&](const StridedParams<2>& p, auto b, int64_t n) {
              cumsum_lines<<<grid_for(n, 128, 65536), 128, 0, ctx_->stream>>>(
                  px + b[1], py + b[0], p, uint32_t(n), len, xs, ys);
              check_launch("cumsum");
            });
      } else {
        unsupported("cumsum", out);
      }
    });
  });
}

}  // namespace nascent::cuda
