// copy: strided gather/scatter with dtype conversion; the workhorse behind
// contiguous(), cast(), cat() and pad(). Contiguous runs between f32, f16
// and bf16 convert with SIMD (convert_simd.cpp).
#include <cstring>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/convert.h"
#include "nascent/backends/cpu/simd/runs.h"
#include "nascent/backends/cpu/strided.h"

namespace nascent::cpu {

void Backend::copy(const Tensor& src, Tensor& dst) {
  StridedLoop<2> loop(dst.shape(), {dst.strides(), src.strides()});
  std::byte* d = byte_ptr(dst);
  const std::byte* s = byte_ptr(src);
  if (src.dtype() == dst.dtype()) {
    const int64_t size = int64_t(dst.itemsize());
    loop.parallel(kElementwiseGrain, [&](auto off, int64_t n, auto st) {
      std::byte* dp = d + off[0] * size;
      const std::byte* sp = s + off[1] * size;
      if (st[0] == 1 && st[1] == 1) {
        std::memcpy(dp, sp, size_t(n * size));
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(dp + i * st[0] * size, sp + i * st[1] * size, size_t(size));
      }
    });
    return;
  }
  if (simd::has_convert(src.dtype(), dst.dtype())) {
    const DType from = src.dtype(), to = dst.dtype();
    const int64_t ssize = int64_t(src.itemsize()),
                  dsize = int64_t(dst.itemsize());
    loop.parallel(kElementwiseGrain, [&](auto off, int64_t n, auto st) {
      if (st[0] == 1 && st[1] == 1) {
        return simd::convert(from, to, s + off[1] * ssize, d + off[0] * dsize,
                             n);
      }
      dispatch_dtype(to, [&](auto dt) {
        using D = decltype(dt);
        dispatch_dtype(from, [&](auto stag) {
          using S = decltype(stag);
          D* dp = reinterpret_cast<D*>(d) + off[0];
          const S* sp = reinterpret_cast<const S*>(s) + off[1];
          for (int64_t i = 0; i < n; ++i) {
            dp[i * st[0]] = convert<D>(sp[i * st[1]]);
          }
        });
      });
    });
    return;
  }
  dispatch_dtype(dst.dtype(), [&](auto dt) {
    using D = decltype(dt);
    dispatch_dtype(src.dtype(), [&](auto stag) {
      using S = decltype(stag);
      loop.parallel(kElementwiseGrain, [&](auto off, int64_t n, auto st) {
        D* dp = reinterpret_cast<D*>(d) + off[0];
        const S* sp = reinterpret_cast<const S*>(s) + off[1];
        if (st[0] == 1 && st[1] == 1) {
          convert_run(sp, dp, n);
          return;
        }
        for (int64_t i = 0; i < n; ++i) {
          dp[i * st[0]] = convert<D>(sp[i * st[1]]);
        }
      });
    });
  });
}

}  // namespace nascent::cpu
