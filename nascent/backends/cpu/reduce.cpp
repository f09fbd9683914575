// reduce on the CPU.
//
// The axes are first simplified: size-1 axes dropped, the rest sorted by x's
// stride (largest first) and neighbours merged, so most requests become one
// of two SIMD shapes (reduce/kernels.h):
//  - inner: the innermost axis is reduced and contiguous (a sum per row);
//    whole batches of rows go to reduce_rows;
//  - outer: the innermost axis is kept and contiguous (a sum over a batch);
//    reduce_cols adds whole rows into a row of accumulators.
// Everything else (integers, bool, prod, strided runs) runs a scalar loop
// over runs of the innermost reduced axis. argmax/argmin keep the axis order,
// since their index counts the reduced elements in row-major order.
//
// var and logsumexp are two passes (the mean, then the sum of squared
// deviations; the max, then the sum of exp(x - max)), which stays accurate
// where the one-pass formulas cancel; var's mean is itself taken as
// x0 + mean(x - x0) with x0 one of the values, so that f32 partial sums see
// the spread of the data rather than a large common offset.
//
// Work is split over outputs and, when an output reduces many elements, over
// fixed blocks of them merged in order, so a result does not depend on the
// thread count.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/convert.h"
#include "nascent/backends/cpu/reduce/kernels.h"
#include "nascent/backends/cpu/reduce/plan.h"
#include "nascent/backends/cpu/thread_pool.h"

namespace nascent::cpu {

namespace {

using namespace reduction;

constexpr int64_t kColChunk = 4096;    // Columns per task in the outer shape.
constexpr int64_t kMaxRowBlocks = 16;  // Partial rows per output row, at most.

enum class Kind : uint8_t {
  sum,
  prod,
  max,
  min,
  sum_dev,
  sum_sq_dev,
  sum_exp_dev
};

double merge_double(Kind kind, double a, double b) {
  switch (kind) {
    case Kind::max:
      return b > a || b != b ? b : a;
    case Kind::min:
      return b < a || b != b ? b : a;
    case Kind::prod:
      return a * b;
    case Kind::sum:
    case Kind::sum_dev:
    case Kind::sum_sq_dev:
    case Kind::sum_exp_dev:
      break;
  }
  return a + b;
}

double identity_double(Kind kind) {
  switch (kind) {
    case Kind::max:
      return -std::numeric_limits<double>::infinity();
    case Kind::min:
      return std::numeric_limits<double>::infinity();
    case Kind::prod:
      return 1.0;
    case Kind::sum:
    case Kind::sum_dev:
    case Kind::sum_sq_dev:
    case Kind::sum_exp_dev:
      break;
  }
  return 0.0;
}

SimdReduce simd_kind(Kind kind) {
  switch (kind) {
    case Kind::max:
      return SimdReduce::max;
    case Kind::min:
      return SimdReduce::min;
    case Kind::sum_dev:
      return SimdReduce::sum_dev;
    case Kind::sum_sq_dev:
      return SimdReduce::sum_sq_dev;
    case Kind::sum_exp_dev:
      return SimdReduce::sum_exp_dev;
    case Kind::sum:
    case Kind::prod:
      break;
  }
  return SimdReduce::sum;
}

// Scalar runs of a floating x, any stride, in double.
template <class T>
struct ScalarFloat {
  using State = double;
  const Plan& plan;
  Kind kind;
  const double* shift;
  State identity() const { return identity_double(kind); }
  State merge(State a, State b) const { return merge_double(kind, a, b); }
  State run(int64_t off, int64_t n, int64_t stride, int64_t,
            int64_t ooff) const {
    const T* p = reinterpret_cast<const T*>(plan.x) + off;
    const double sh = shift ? shift[ooff] : 0.0;
    double acc = identity();
    for (int64_t i = 0; i < n; ++i) {
      const double v = to_double(p[i * stride]);
      switch (kind) {
        case Kind::sum_dev:
          acc += v - sh;
          break;
        case Kind::sum_sq_dev:
          acc += (v - sh) * (v - sh);
          break;
        case Kind::sum_exp_dev:
          acc += std::exp(v - sh);
          break;
        case Kind::sum:
        case Kind::prod:
        case Kind::max:
        case Kind::min:
          acc = merge_double(kind, acc, v);
          break;
      }
    }
    return acc;
  }
};

// The SIMD path's runs, for the inner shape when rows cannot be batched.
struct SimdRuns {
  using State = double;
  const Plan& plan;
  Kind kind;
  DType dtype;
  const double* shift;
  State identity() const { return identity_double(kind); }
  State merge(State a, State b) const { return merge_double(kind, a, b); }
  State run(int64_t off, int64_t n, int64_t, int64_t, int64_t ooff) const {
    double r;
    reduce_rows(simd_kind(kind), dtype, plan.x + off * plan.item, 1, 0, n,
                shift ? shift + ooff : nullptr, &r, 0);
    return r;
  }
};

// Inner shape, one reduced axis: batches of outputs along the innermost kept
// axis go to reduce_rows in one call.
void simd_inner_rows(const Plan& plan, Kind kind, DType dtype,
                     const double* shift, double* res) {
  const int64_t n = plan.red.back().size;
  const Dim rows = plan.kept.empty() ? Dim{1, 0, 0} : plan.kept.back();
  const size_t outer = plan.kept.empty() ? 0 : plan.kept.size() - 1;
  parallel_for(plan.num_out, std::max<int64_t>(1, kGrain / n),
               [&](int64_t o0, int64_t o1) {
                 for (int64_t o = o0; o < o1;) {
                   const int64_t r0 = o % rows.size;
                   const int64_t count = std::min(rows.size - r0, o1 - o);
                   int64_t xoff, ooff;
                   locate(plan.kept, outer, o / rows.size, xoff, ooff);
                   xoff += r0 * rows.xs;
                   ooff += r0 * rows.os;
                   reduce_rows(simd_kind(kind), dtype,
                               plan.x + xoff * plan.item, count, rows.xs, n,
                               shift ? shift + ooff : nullptr, res + ooff,
                               rows.os);
                   o += count;
                 }
               });
}

// Inner shape, one long contiguous reduced axis: each output's run is cut
// into blocks of kBlock elements (the last shorter) whose results merge in
// order. A thread's whole blocks go to reduce_rows as rows, which it reads
// as several streams at once.
void simd_inner_blocks(const Plan& plan, Kind kind, DType dtype,
                       const double* shift, double* res) {
  const int64_t n = plan.red.back().size;
  const int64_t nb = (n + kBlock - 1) / kBlock, full = n / kBlock;
  const int64_t tasks = plan.num_out * nb;
  std::vector<double> partial(static_cast<size_t>(tasks));
  std::vector<double> sh(shift ? size_t(tasks) : 0);
  std::vector<int64_t> xoffs(size_t(plan.num_out)), ooffs(xoffs.size());
  for (int64_t o = 0; o < plan.num_out; ++o) {
    locate(plan.kept, plan.kept.size(), o, xoffs[size_t(o)], ooffs[size_t(o)]);
    for (int64_t b = 0; shift && b < nb; ++b) {
      sh[size_t(o * nb + b)] = shift[ooffs[size_t(o)]];
    }
  }
  parallel_for(tasks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1;) {
      const int64_t o = t / nb, b = t % nb;
      const int64_t rows = b < full ? std::min(full - b, t1 - t) : 1;
      reduce_rows(simd_kind(kind), dtype,
                  plan.x + (xoffs[size_t(o)] + b * kBlock) * plan.item, rows,
                  kBlock, b < full ? kBlock : n - b * kBlock,
                  shift ? sh.data() + t : nullptr, partial.data() + t, 1);
      t += rows;
    }
  });
  for (int64_t o = 0; o < plan.num_out; ++o) {
    double s = partial[size_t(o * nb)];
    for (int64_t b = 1; b < nb; ++b) {
      s = merge_double(kind, s, partial[size_t(o * nb + b)]);
    }
    res[ooffs[size_t(o)]] = s;
  }
}

// Outer shape: the innermost kept axis is contiguous. Tasks take a group of
// the other kept axes, a chunk of columns and a block of reduced rows.
void simd_outer(const Plan& plan, Kind kind, DType dtype, const double* shift,
                double* res) {
  const Dim cols = plan.kept.back();
  const size_t outer = plan.kept.size() - 1;
  const int64_t groups = plan.num_out / cols.size;
  const int64_t chunks = (cols.size + kColChunk - 1) / kColChunk;
  const int64_t chunk = std::min(cols.size, kColChunk);
  const int64_t total = plan.num_red;
  const int64_t nb =
      std::clamp<int64_t>(total * chunk / (kBlock * 4), 1, kMaxRowBlocks);
  const int64_t tasks = groups * chunks * nb;
  const Dim rr = plan.red.back();
  std::vector<double> partial(nb > 1 ? size_t(tasks * chunk) : 0);
  const int64_t per_task = std::max<int64_t>(1, total / nb * chunk);
  parallel_for(
      tasks, std::max<int64_t>(1, kGrain / per_task),
      [&](int64_t t0, int64_t t1) {
        std::vector<double> acc(static_cast<size_t>(chunk));
        std::vector<double> sh(shift ? static_cast<size_t>(chunk) : 0);
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t b = t % nb, c = t / nb % chunks, g = t / nb / chunks;
          const int64_t j0 = c * kColChunk;
          const int64_t w = std::min(kColChunk, cols.size - j0);
          int64_t gx, go;
          locate(plan.kept, outer, g, gx, go);
          std::fill(acc.begin(), acc.begin() + w, identity_double(kind));
          for (int64_t j = 0; j < int64_t(sh.size()) && j < w; ++j) {
            sh[size_t(j)] = shift[go + (j0 + j) * cols.os];
          }
          // Rows of the block, in pieces along the innermost reduced axis.
          walk_reduced(plan, gx + j0, total * b / nb, total * (b + 1) / nb,
                       [&](int64_t off, int64_t count, int64_t) {
                         reduce_cols(simd_kind(kind), dtype,
                                     plan.x + off * plan.item, count, rr.xs, w,
                                     shift ? sh.data() : nullptr, acc.data());
                       });
          if (nb == 1) {
            for (int64_t j = 0; j < w; ++j) {
              res[go + (j0 + j) * cols.os] = acc[size_t(j)];
            }
          } else {
            std::copy(acc.begin(), acc.begin() + w,
                      partial.begin() + t * chunk);
          }
        }
      });
  if (nb == 1) return;
  for (int64_t g = 0; g < groups; ++g) {
    int64_t gx, go;
    locate(plan.kept, outer, g, gx, go);
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t j0 = c * kColChunk;
      const int64_t w = std::min(kColChunk, cols.size - j0);
      const double* p = partial.data() + (g * chunks + c) * nb * chunk;
      for (int64_t j = 0; j < w; ++j) {
        double s = p[j];
        for (int64_t b = 1; b < nb; ++b)
          s = merge_double(kind, s, p[b * chunk + j]);
        res[go + (j0 + j) * cols.os] = s;
      }
    }
  }
}

// One pass over a floating x: res[out offset] for sum, prod, max, min and
// the two deviation sums.
std::vector<double> float_pass(const Plan& plan, Kind kind, DType dtype,
                               const double* shift, int64_t out_numel) {
  std::vector<double> res(size_t(out_numel), identity_double(kind));
  if (plan.num_red == 0) return res;
  const bool simd = kind != Kind::prod;
  const Dim& run = plan.red.back();
  if (simd && plan.last_is_red && run.xs == 1) {
    if (plan.red.size() == 1 && plan.num_red <= kBlock) {
      simd_inner_rows(plan, kind, dtype, shift, res.data());
    } else if (plan.red.size() == 1) {
      simd_inner_blocks(plan, kind, dtype, shift, res.data());
    } else {
      reduce_generic(plan, SimdRuns{plan, kind, dtype, shift}, res);
    }
    return res;
  }
  if (simd && !plan.last_is_red && plan.kept.back().xs == 1) {
    simd_outer(plan, kind, dtype, shift, res.data());
    return res;
  }
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, float16> ||
                  std::is_same_v<T, bfloat16>) {
      reduce_generic(plan, ScalarFloat<T>{plan, kind, shift}, res);
    }
  });
  return res;
}

// Integers and bool: sums and products in i64 (wrapping like PyTorch),
// max and min exactly.
template <class T>
struct ScalarInt {
  using State = int64_t;
  const Plan& plan;
  Kind kind;
  State identity() const {
    switch (kind) {
      case Kind::prod:
        return 1;
      case Kind::max:
        return std::numeric_limits<int64_t>::min();
      case Kind::min:
        return std::numeric_limits<int64_t>::max();
      case Kind::sum:
      case Kind::sum_dev:
      case Kind::sum_sq_dev:
      case Kind::sum_exp_dev:
        break;
    }
    return 0;
  }
  State merge(State a, State b) const {
    switch (kind) {
      case Kind::prod:
        return int64_t(uint64_t(a) * uint64_t(b));
      case Kind::max:
        return std::max(a, b);
      case Kind::min:
        return std::min(a, b);
      case Kind::sum:
      case Kind::sum_dev:
      case Kind::sum_sq_dev:
      case Kind::sum_exp_dev:
        break;
    }
    return int64_t(uint64_t(a) + uint64_t(b));
  }
  State run(int64_t off, int64_t n, int64_t stride, int64_t, int64_t) const {
    const T* p = reinterpret_cast<const T*>(plan.x) + off;
    State acc = identity();
    for (int64_t i = 0; i < n; ++i) acc = merge(acc, int64_t(p[i * stride]));
    return acc;
  }
};

// argmax/argmin of any dtype: (value, flat index of the first extreme).
template <class T>
struct ScalarArg {
  using V = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
  struct State {
    V v{};
    int64_t i = -1;  // -1: no element yet.
  };
  const Plan& plan;
  bool is_max;
  State identity() const { return {}; }
  bool better(V b, V a) const {  // b strictly beats a; NaN beats all.
    if constexpr (std::is_integral_v<T>) {
      return is_max ? b > a : b < a;
    } else {
      if (a != a) return false;
      return b != b || (is_max ? b > a : b < a);
    }
  }
  State merge(State a, State b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    return better(b.v, a.v) ? b : a;
  }
  State run(int64_t off, int64_t n, int64_t stride, int64_t first,
            int64_t) const {
    const T* p = reinterpret_cast<const T*>(plan.x) + off;
    State s;
    for (int64_t i = 0; i < n; ++i) {
      V v;
      if constexpr (std::is_integral_v<T>) {
        v = V(p[i * stride]);
      } else {
        v = to_double(p[i * stride]);
      }
      if (s.i < 0 || better(v, s.v)) s = {v, first + i};
    }
    return s;
  }
};

// arg_pass for contiguous rows longer than kBlock: the rows' kBlock-element
// blocks (the last shorter) go to arg_rows as rows of their own, spread over
// the threads, and each row's block results merge in order (the first block
// holding the extreme, or the first holding a NaN, wins).
std::vector<int64_t> arg_long_rows(const Plan& plan, bool is_max, DType dtype,
                                   int64_t out_numel) {
  const int64_t n = plan.red.back().size;
  const int64_t nb = (n + kBlock - 1) / kBlock, full = n / kBlock;
  std::vector<int64_t> block_idx(size_t(plan.num_out * nb));
  std::vector<int64_t> res(size_t(out_numel), 0);
  std::vector<int64_t> xoffs(size_t(plan.num_out), 0);
  std::vector<int64_t> ooffs(size_t(plan.num_out), 0);
  for (int64_t o = 0; o < plan.num_out; ++o) {
    locate(plan.kept, plan.kept.size(), o, xoffs[size_t(o)], ooffs[size_t(o)]);
  }
  parallel_for(plan.num_out * nb, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1;) {
      const int64_t o = t / nb, b = t % nb;
      const std::byte* row = plan.x + xoffs[size_t(o)] * plan.item;
      if (b < full) {  // Whole blocks up to t1 or the row's end, at once.
        const int64_t count = std::min(full - b, t1 - t);
        arg_rows(is_max, dtype, row + b * kBlock * plan.item, count, kBlock,
                 kBlock, block_idx.data() + t, 1);
        t += count;
      } else {
        arg_rows(is_max, dtype, row + b * kBlock * plan.item, 1, 0,
                 n - b * kBlock, block_idx.data() + t, 1);
        t += 1;
      }
    }
  });
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, float16> ||
                  std::is_same_v<T, bfloat16>) {
      const ScalarArg<T> arg{plan, is_max};
      for (int64_t o = 0; o < plan.num_out; ++o) {
        const T* x = reinterpret_cast<const T*>(plan.x) + xoffs[size_t(o)];
        typename ScalarArg<T>::State s;
        for (int64_t b = 0; b < nb; ++b) {
          const int64_t i = b * kBlock + block_idx[size_t(o * nb + b)];
          const double v = to_double(x[i]);
          if (s.i < 0 || arg.better(v, s.v)) s = {v, i};
        }
        res[size_t(ooffs[size_t(o)])] = s.i;
      }
    }
  });
  return res;
}

std::vector<int64_t> arg_pass(const Plan& plan, bool is_max, DType dtype,
                              int64_t out_numel) {
  std::vector<int64_t> res(size_t(out_numel), 0);
  if (plan.num_red == 0) return res;
  const Dim& run = plan.red.back();
  if (is_floating(dtype) && plan.red.size() == 1 && plan.last_is_red &&
      run.xs == 1) {
    if (plan.num_red > kBlock) {
      return arg_long_rows(plan, is_max, dtype, out_numel);
    }
    const Dim rows = plan.kept.empty() ? Dim{1, 0, 0} : plan.kept.back();
    const size_t outer = plan.kept.empty() ? 0 : plan.kept.size() - 1;
    parallel_for(plan.num_out, std::max<int64_t>(1, kGrain / run.size),
                 [&](int64_t o0, int64_t o1) {
                   for (int64_t o = o0; o < o1;) {
                     const int64_t r0 = o % rows.size;
                     const int64_t count = std::min(rows.size - r0, o1 - o);
                     int64_t xoff, ooff;
                     locate(plan.kept, outer, o / rows.size, xoff, ooff);
                     xoff += r0 * rows.xs;
                     ooff += r0 * rows.os;
                     arg_rows(is_max, dtype, plan.x + xoff * plan.item, count,
                              rows.xs, run.size, res.data() + ooff, rows.os);
                     o += count;
                   }
                 });
    return res;
  }
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    using R = ScalarArg<T>;
    std::vector<typename R::State> states(static_cast<size_t>(out_numel));
    reduce_generic(plan, R{plan, is_max}, states);
    for (size_t o = 0; o < states.size(); ++o) res[o] = states[o].i;
  });
  return res;
}

std::vector<int64_t> int_pass(const Plan& plan, Kind kind, DType dtype,
                              int64_t out_numel) {
  std::vector<int64_t> res;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      ScalarInt<T> r{plan, kind};
      res.assign(size_t(out_numel), r.identity());
      if (plan.num_red > 0) reduce_generic(plan, r, res);
    }
  });
  return res;
}

// One value of each output's group (its reduced index 0), by out offset.
std::vector<double> first_values(const Plan& plan, DType dtype,
                                 int64_t out_numel) {
  std::vector<double> res(size_t(out_numel), 0.0);
  if (plan.num_red == 0) return res;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = reinterpret_cast<const T*>(plan.x);
    for (int64_t o = 0; o < plan.num_out; ++o) {
      int64_t xoff, ooff;
      locate(plan.kept, plan.kept.size(), o, xoff, ooff);
      res[size_t(ooff)] = to_double(x[xoff]);
    }
  });
  return res;
}

// Writes values[i] (double or i64) into the contiguous out, converted.
template <class S>
void write_out(const std::vector<S>& values, Tensor& out) {
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = data_ptr<T>(out);
    parallel_for(out.numel(), kGrain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        if constexpr (std::is_same_v<S, double>) {
          o[i] = from_double<T>(values[size_t(i)]);
        } else {
          o[i] = convert<T>(values[size_t(i)]);
        }
      }
    });
  });
}

}  // namespace

void Backend::reduce(ReduceOp op, const Tensor& x, const std::vector<int>& axes,
                     const ReduceParams& p, Tensor& out) {
  const int64_t n_out = out.numel();
  if (n_out == 0) return;
  const bool arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
  const Plan plan = make_plan(x, axes, out, !arg);
  const DType dt = x.dtype();
  if (arg) {
    write_out(arg_pass(plan, op == ReduceOp::argmax, dt, n_out), out);
    return;
  }
  if (!is_floating(dt)) {
    Kind kind = op == ReduceOp::prod  ? Kind::prod
                : op == ReduceOp::max ? Kind::max
                : op == ReduceOp::min ? Kind::min
                                      : Kind::sum;
    write_out(int_pass(plan, kind, dt, n_out), out);
    return;
  }
  const double count = double(plan.num_red);
  std::vector<double> res;
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::prod:
    case ReduceOp::max:
    case ReduceOp::min: {
      const Kind kind = op == ReduceOp::sum    ? Kind::sum
                        : op == ReduceOp::prod ? Kind::prod
                        : op == ReduceOp::max  ? Kind::max
                                               : Kind::min;
      res = float_pass(plan, kind, dt, nullptr, n_out);
      break;
    }
    case ReduceOp::mean:
      res = float_pass(plan, Kind::sum, dt, nullptr, n_out);
      for (double& v : res) v /= count;
      break;
    case ReduceOp::var: {
      // The mean as x0 + mean(x - x0) with x0 one of the group's values:
      // f32 partial sums then see the spread, not a large common offset.
      std::vector<double> mean = first_values(plan, dt, n_out);
      std::vector<double> dev =
          float_pass(plan, Kind::sum_dev, dt, mean.data(), n_out);
      for (size_t i = 0; i < mean.size(); ++i) mean[i] += dev[i] / count;
      res = float_pass(plan, Kind::sum_sq_dev, dt, mean.data(), n_out);
      const double dof = std::max(0.0, count - double(p.correction));
      for (double& v : res) {
        v /= dof;
        if (p.take_sqrt) v = std::sqrt(v);
      }
      break;
    }
    case ReduceOp::logsumexp: {
      std::vector<double> max = float_pass(plan, Kind::max, dt, nullptr, n_out);
      // An infinite or NaN max decides the result; shift those by 0.
      std::vector<double> shift = max;
      for (double& v : shift) v = std::isfinite(v) ? v : 0.0;
      res = float_pass(plan, Kind::sum_exp_dev, dt, shift.data(), n_out);
      for (size_t i = 0; i < res.size(); ++i) {
        res[i] = std::isfinite(max[i]) ? max[i] + std::log(res[i]) : max[i];
      }
      break;
    }
    case ReduceOp::argmax:
    case ReduceOp::argmin:
      break;  // Handled above.
  }
  write_out(res, out);
}

}  // namespace nascent::cpu
