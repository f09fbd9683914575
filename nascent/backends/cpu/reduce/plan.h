// Geometry shared by the CPU reductions (reduce.cpp): a reduction's axes
// simplified into kept and reduced lists, and the generic driver that walks
// them in blocks on the thread pool.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/tensor.h"

namespace nascent::cpu::reduction {

constexpr int64_t kGrain = 32768;    // Elements worth a thread.
constexpr int64_t kBlock = 1 << 16;  // Reduced elements per partial result.

struct Dim {
  int64_t size;
  int64_t xs;  // Stride in x.
  int64_t os;  // Stride in out (0 on reduced axes).
};

// x's axes split into kept and reduced ones, outermost first.
struct Plan {
  const std::byte* x = nullptr;
  int64_t item = 0;
  std::vector<Dim> kept, red;
  int64_t num_out = 1, num_red = 1;
  bool last_is_red = true;  // Whether the innermost axis is a reduced one.
};

// Drops size-1 axes, splits kept from reduced ones and merges neighbours
// that are contiguous in both x and out. With `reorder` (every op but the
// arg ones) axes are first sorted by x's stride and reduced axes with a
// negative stride are walked forwards.
Plan make_plan(const Tensor& x, const std::vector<int>& axes, const Tensor& out,
               bool reorder);

// x and out offsets (elements) of output number o, counting the kept axes
// row-major over dims[0, count).
inline void locate(const std::vector<Dim>& dims, size_t count, int64_t o,
                   int64_t& xoff, int64_t& ooff) {
  xoff = ooff = 0;
  for (size_t k = count; k-- > 0;) {
    const int64_t i = o % dims[k].size;
    o /= dims[k].size;
    xoff += i * dims[k].xs;
    ooff += i * dims[k].os;
  }
}

// Walks the reduced elements [f0, f1) (row-major over plan.red) of the
// output whose x offset is xoff, calling fn(x offset, run length, flat index
// of the run's first element) per piece of the innermost reduced axis.
template <class Fn>
void walk_reduced(const Plan& plan, int64_t xoff, int64_t f0, int64_t f1,
                  Fn&& fn) {
  const std::vector<Dim>& red = plan.red;
  const Dim& run = red.back();
  const size_t outer = red.size() - 1;
  int64_t idx_small[8] = {};
  std::vector<int64_t> idx_big(outer > 8 ? outer : 0);
  int64_t* idx = outer > 8 ? idx_big.data() : idx_small;
  int64_t q = f0 / run.size, col = f0 % run.size;
  int64_t row = xoff;
  for (size_t k = outer; k-- > 0;) {
    idx[k] = q % red[k].size;
    q /= red[k].size;
    row += idx[k] * red[k].xs;
  }
  for (int64_t f = f0; f < f1;) {
    const int64_t len = std::min(run.size - col, f1 - f);
    fn(row + col * run.xs, len, f);
    f += len;
    col = 0;
    for (size_t k = outer; k-- > 0;) {
      row += red[k].xs;
      if (++idx[k] < red[k].size) break;
      row -= red[k].xs * red[k].size;
      idx[k] = 0;
    }
  }
}

// The generic driver: res[out offset] = merge over blocks of r.run(...).
// R supplies State, identity(), merge(a, b) and run(x offset, n, stride,
// first flat index, out offset).
template <class R>
void reduce_generic(const Plan& plan, const R& r,
                    std::vector<typename R::State>& res) {
  using State = typename R::State;
  const int64_t total = plan.num_red;
  const int64_t stride = plan.red.back().xs;
  const int64_t nblocks = total > kBlock ? (total + kBlock - 1) / kBlock : 1;
  auto block = [&](int64_t o, int64_t b) {
    int64_t xoff, ooff;
    locate(plan.kept, plan.kept.size(), o, xoff, ooff);
    State s = r.identity();
    walk_reduced(plan, xoff, total * b / nblocks, total * (b + 1) / nblocks,
                 [&](int64_t off, int64_t n, int64_t first) {
                   s = r.merge(s, r.run(off, n, stride, first, ooff));
                 });
    return std::make_pair(ooff, s);
  };
  if (nblocks == 1) {
    parallel_for(plan.num_out, std::max<int64_t>(1, kGrain / total),
                 [&](int64_t o0, int64_t o1) {
                   for (int64_t o = o0; o < o1; ++o) {
                     auto [ooff, s] = block(o, 0);
                     res[size_t(ooff)] = s;
                   }
                 });
    return;
  }
  std::vector<State> partial(size_t(plan.num_out * nblocks));
  std::vector<int64_t> offsets(size_t(plan.num_out));
  parallel_for(plan.num_out * nblocks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      auto [ooff, s] = block(t / nblocks, t % nblocks);
      partial[size_t(t)] = s;
      if (t % nblocks == 0) offsets[size_t(t / nblocks)] = ooff;
    }
  });
  for (int64_t o = 0; o < plan.num_out; ++o) {
    State s = partial[size_t(o * nblocks)];
    for (int64_t b = 1; b < nblocks; ++b) {
      s = r.merge(s, partial[size_t(o * nblocks + b)]);
    }
    res[size_t(offsets[size_t(o)])] = s;
  }
}

}  // namespace nascent::cpu::reduction
