// cumsum on the CPU. x is any strided view; out is contiguous, of x's dtype
// for floats and i64 for integers and bool. Sums run in double for floating
// types (as PyTorch's CPU cumsum does) and in wrapping i64 for integers.
//
// The axes other than the scanned one are walked as "lines" (StridedLoop
// merges them); a batch of lines that are neighbours in memory is scanned
// row by row with a row of accumulators, so a scan over an outer axis reads
// whole contiguous rows instead of striding through memory.
#include <cstdlib>
#include <vector>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/convert.h"
#include "nascent/backends/cpu/strided.h"

namespace nascent::cpu {

void Backend::scan(ScanOp op, const Tensor& x, int axis, Tensor& out) {
  switch (op) {
    case ScanOp::cumsum:
      break;
  }
  if (out.numel() == 0) return;
  const common::ScanLines geo = common::scan_lines(x, axis, out);
  const int64_t len = geo.len, xs = geo.xs, os = geo.os;
  StridedLoop<2> lines(geo.lines);
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / len);
  dispatch_dtype(out.dtype(), [&](auto out_tag) {
    using D = decltype(out_tag);
    dispatch_dtype(x.dtype(), [&](auto x_tag) {
      using S = decltype(x_tag);
      using A = std::conditional_t<std::is_integral_v<S>, uint64_t, double>;
      auto add = [](A acc, S v) {
        if constexpr (std::is_integral_v<S>) {
          return acc + uint64_t(int64_t(v));
        } else {
          return acc + to_double(v);
        }
      };
      auto put = [](A acc) {
        if constexpr (std::is_integral_v<S>) {
          return convert<D>(int64_t(acc));
        } else {
          return from_double<D>(acc);
        }
      };
      D* o = data_ptr<D>(out);
      const S* s = data_ptr<S>(x);
      lines.parallel(grain, [&](auto off, int64_t n, auto st) {
        D* ob = o + off[0];
        const S* sb = s + off[1];
        if (n > 1 && std::llabs(st[1]) < std::llabs(xs)) {
          std::vector<A> acc(size_t(n), A(0));
          for (int64_t l = 0; l < len; ++l) {
            for (int64_t k = 0; k < n; ++k) {
              acc[size_t(k)] = add(acc[size_t(k)], sb[k * st[1] + l * xs]);
              ob[k * st[0] + l * os] = put(acc[size_t(k)]);
            }
          }
          return;
        }
        for (int64_t k = 0; k < n; ++k) {
          A acc = A(0);
          for (int64_t l = 0; l < len; ++l) {
            acc = add(acc, sb[k * st[1] + l * xs]);
            ob[k * st[0] + l * os] = put(acc);
          }
        }
      });
    });
  });
}

}  // namespace nascent::cpu
