// uniform, normal and bernoulli from core's Philox definition (random.h).
#include "nascent/core/random.h"

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/convert.h"
#include "nascent/backends/cpu/thread_pool.h"

namespace nascent::cpu {

void Backend::random(RandomOp op, const RandomParams& p, Tensor& out) {
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* dst = data_ptr<T>(out);
    const int64_t n = out.numel();
    // Work in whole counter blocks of 4 so each block is drawn once.
    const uint64_t first = p.offset / 4,
                   last = (p.offset + uint64_t(n) + 3) / 4;
    parallel_for(int64_t(last - first), 4096, [&](int64_t b0, int64_t b1) {
      for (uint64_t blk = first + uint64_t(b0); blk < first + uint64_t(b1);
           ++blk) {
        std::array<float, 4> v = op == RandomOp::normal ? normal4(p.seed, blk)
                                                        : uniform4(p.seed, blk);
        for (int lane = 0; lane < 4; ++lane) {
          int64_t i = int64_t(blk * 4 + uint64_t(lane) - p.offset);
          if (i < 0 || i >= n) continue;
          double x = v[size_t(lane)];
          switch (op) {
            case RandomOp::uniform:
              x = p.a + (p.b - p.a) * x;
              break;
            case RandomOp::normal:
              x = p.a + p.b * x;
              break;
            case RandomOp::bernoulli:
              x = x < p.a ? 1.0 : 0.0;
              break;
          }
          dst[i] = from_double<T>(x);
        }
      }
    });
  });
}

}  // namespace nascent::cpu
