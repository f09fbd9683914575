// fill and arange.
#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/convert.h"
#include "nascent/backends/cpu/strided.h"
#include "nascent/backends/cpu/thread_pool.h"

namespace nascent::cpu {

void Backend::create(CreationOp op, Scalar a, Scalar b, Tensor& out) {
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = data_ptr<T>(out);
    switch (op) {
      case CreationOp::fill: {
        T v = a.is_integral() && std::is_integral_v<T>
                  ? convert<T>(a.to_int64())
                  : from_double<T>(a.to_double());
        parallel_for(out.numel(), kElementwiseGrain, [&](int64_t s, int64_t e) {
          for (int64_t i = s; i < e; ++i) p[i] = v;
        });
        break;
      }
      case CreationOp::arange: {
        bool exact = a.is_integral() && b.is_integral();
        parallel_for(out.numel(), kElementwiseGrain, [&](int64_t s, int64_t e) {
          for (int64_t i = s; i < e; ++i) {
            p[i] =
                exact
                    ? convert<T>(a.to_int64() + i * b.to_int64())
                    : from_double<T>(a.to_double() + double(i) * b.to_double());
          }
        });
        break;
      }
    }
  });
}

}  // namespace nascent::cpu
