#include "nascent/backends/cpu/reduce/plan.h"

#include <cstdlib>
#include <limits>

#include "nascent/backends/cpu/backend.h"

namespace nascent::cpu::reduction {

Plan make_plan(const Tensor& x, const std::vector<int>& axes, const Tensor& out,
               bool reorder) {
  Plan plan;
  plan.item = int64_t(x.itemsize());
  plan.x = byte_ptr(x);
  struct Axis {
    Dim dim;
    bool red;
  };
  std::vector<Axis> dims;
  for (int d = 0; d < x.ndim(); ++d) {
    const int64_t size = x.shape()[size_t(d)];
    if (size == 1) continue;
    const bool red = std::find(axes.begin(), axes.end(), d) != axes.end();
    Dim dim{size, x.strides()[size_t(d)], red ? 0 : out.strides()[size_t(d)]};
    if (reorder && red && dim.xs < 0) {  // Order is free: walk it forwards.
      plan.x += (size - 1) * dim.xs * plan.item;
      dim.xs = -dim.xs;
    }
    dims.push_back({dim, red});
  }
  if (reorder) {
    // Broadcast (stride 0) axes go outermost, the contiguous one innermost.
    auto key = [](int64_t s) {
      return s == 0 ? std::numeric_limits<int64_t>::max() : std::llabs(s);
    };
    std::stable_sort(dims.begin(), dims.end(),
                     [&](const Axis& a, const Axis& b) {
                       return key(a.dim.xs) > key(b.dim.xs);
                     });
  }
  std::vector<Axis> merged;
  for (const Axis& a : dims) {
    if (!merged.empty()) {
      Axis& p = merged.back();
      if (p.red == a.red && p.dim.xs == a.dim.xs * a.dim.size &&
          p.dim.os == a.dim.os * a.dim.size) {
        p.dim.size *= a.dim.size;
        p.dim.xs = a.dim.xs;
        p.dim.os = a.dim.os;
        continue;
      }
    }
    merged.push_back(a);
  }
  for (const Axis& a : merged) {
    (a.red ? plan.red : plan.kept).push_back(a.dim);
    (a.red ? plan.num_red : plan.num_out) *= a.dim.size;
  }
  plan.last_is_red = merged.empty() || merged.back().red;
  // A reduction over size-1 axes only: one element per output.
  if (plan.red.empty()) {
    plan.red.push_back({1, 0, 0});
    plan.last_is_red = true;
  }
  return plan;
}

}  // namespace nascent::cpu::reduction
