// matmul: one packed GEMM per (broadcast) batch entry, reading each operand
// through its own strides, so transposed and broadcast inputs are not copied.
// A B shared by the whole batch (x @ W) makes one tall GEMM instead, and a
// batch of small products is spread over the threads entry by entry.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/convert.h"
#include "nascent/backends/cpu/gemm/gemm.h"
#include "nascent/backends/cpu/thread_pool.h"

namespace nascent::cpu {

namespace {

// Multiply-adds per task below which batch entries are grouped before they
// are spread over threads (a GEMM this small runs on one thread anyway).
constexpr double kBatchGrainMacs = 1 << 20;

// C = A * B for one stack of rows; f16/bf16 accumulate into f32 and are
// rounded once at the end.
template <class T>
void gemm_rows(const GemmArgs& g, const T* a, const T* b, T* c) {
  if constexpr (std::is_same_v<T, float>) {
    gemm_f32(g, a, b, c);
  } else if constexpr (std::is_same_v<T, double>) {
    gemm_f64(g, a, b, c);
  } else {
    // c is a dense g.m x g.n block (ldc == n).
    std::vector<float> acc(size_t(g.m * g.n));
    if constexpr (std::is_same_v<T, float16>) {
      gemm_f16(g, a, b, acc.data());
    } else {
      gemm_bf16(g, a, b, acc.data());
    }
    convert_run(acc.data(), c, g.m * g.n);
  }
}

// The stride that walks a's batch and row axes as one axis of `rows` rows,
// if there is one (axes of size 1 do not matter).
bool merged_row_stride(const Shape& batch, const Strides& batch_strides,
                       int64_t m, int64_t rs, int64_t* stride) {
  std::vector<std::pair<int64_t, int64_t>> axes;  // (size, stride)
  for (size_t d = 0; d < batch.size(); ++d) {
    if (batch[d] != 1) axes.emplace_back(batch[d], batch_strides[d]);
  }
  if (m != 1) axes.emplace_back(m, rs);
  for (size_t i = 0; i + 1 < axes.size(); ++i) {
    if (axes[i].second != axes[i + 1].second * axes[i + 1].first) return false;
  }
  *stride = axes.empty() ? rs : axes.back().second;
  return true;
}

}  // namespace

void Backend::matmul(const Tensor& a, const Tensor& b, Tensor& out) {
  if (out.numel() == 0) return;
  const size_t nd = size_t(out.ndim());
  const Shape batch(out.shape().begin(), out.shape().end() - 2);
  const Strides sa(a.strides().begin(), a.strides().end() - 2);
  const Strides sb(b.strides().begin(), b.strides().end() - 2);
  const int64_t count = numel(batch);
  GemmArgs g;
  g.m = out.shape()[nd - 2];
  g.n = out.shape()[nd - 1];
  g.k = a.shape()[nd - 1];
  g.rsa = a.strides()[nd - 2];
  g.csa = a.strides()[nd - 1];
  g.rsb = b.strides()[nd - 2];
  g.csb = b.strides()[nd - 1];
  g.ldc = g.n;

  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      const T* pa = data_ptr<T>(a);
      const T* pb = data_ptr<T>(b);
      T* pc = data_ptr<T>(out);

      // The same B for every entry (x @ W): one tall GEMM over all rows.
      bool shared_b = true;
      for (size_t d = 0; d < batch.size(); ++d) {
        shared_b = shared_b && (sb[d] == 0 || batch[d] == 1);
      }
      int64_t row_stride = 0;
      if (shared_b && merged_row_stride(batch, sa, g.m, g.rsa, &row_stride)) {
        GemmArgs tall = g;
        tall.m = count * g.m;
        tall.rsa = row_stride;
        gemm_rows(tall, pa, pb, pc);
        return;
      }

      auto entry = [&](int64_t i) {
        int64_t off_a = 0, off_b = 0;
        for (size_t d = batch.size(); d-- > 0;) {
          const int64_t idx = i % batch[d];
          i /= batch[d];
          off_a += idx * sa[d];
          off_b += idx * sb[d];
        }
        return std::pair<int64_t, int64_t>{off_a, off_b};
      };
      const double macs = double(g.m) * double(g.n) * double(g.k);
      const int64_t grain = int64_t(
          std::max(1.0, std::ceil(kBatchGrainMacs / std::max(macs, 1.0))));
      auto run = [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          auto [off_a, off_b] = entry(i);
          gemm_rows(g, pa + off_a, pb + off_b, pc + i * g.m * g.n);
        }
      };
      if (count > 1 && macs < kBatchGrainMacs) {
        // Small matrices: the batch is the parallelism.
        parallel_for(count, grain, run);
      } else {
        run(0, count);  // Each GEMM spreads over the threads itself.
      }
    } else {
      throw BackendError(std::string("cpu: matmul does not take ") +
                         nascent::name(out.dtype()));
    }
  });
}

}  // namespace nascent::cpu
