// Gradchecks of the reductions and cumsum, over all axes, some axes and
// with keepdim.
#include "autodiff/gradcheck.h"

namespace nascent::autodiff::testing {
namespace {

using T = std::vector<Tensor>;

using Reduction = Tensor (*)(const Tensor&, const Axes&, bool);

void check_reduction(const char* label, Reduction fn, double low = -2,
                     double high = 2) {
  Input in{{3, 4}, Layout::contiguous, low, high};
  check_layouts(std::string(label) + " all", {in},
                [&](const T& x) { return fn(x[0], {}, false); });
  check_layouts(std::string(label) + " axis 1", {in},
                [&](const T& x) { return fn(x[0], {1}, false); });
  check_layouts(std::string(label) + " axis 0 keepdim", {in},
                [&](const T& x) { return fn(x[0], {0}, true); });
  Input in3{{2, 3, 4}, Layout::contiguous, low, high};
  check(std::string(label) + " axes 0, 2 of 3-D", {in3}, [&](const T& x) {
    return fn(x[0], {0, -1}, false);
  });
  check(std::string(label) + " 0-d", {{{}, Layout::contiguous, low, high}},
        [&](const T& x) { return fn(x[0], {}, false); });
}

GRADCHECK_CASE(sum, "axes") {
  check_reduction("sum", sum);
}
GRADCHECK_CASE(mean, "axes") {
  check_reduction("mean", mean);
}
GRADCHECK_CASE(max, "axes, no ties") {
  check_reduction("max", max);
}
GRADCHECK_CASE(min, "axes, no ties") {
  check_reduction("min", min);
}
GRADCHECK_CASE(logsumexp, "axes") {
  check_reduction("logsumexp", logsumexp);
}
GRADCHECK_CASE(prod, "axes, with zeros") {
  check_reduction("prod", prod, 0.5, 1.5);
  check_reduction("prod of signed", prod, -1.5, 1.5);
  // Exact zeros: one in row 0, two in row 1 (prod is a polynomial, so
  // finite differences work there too).
  Tensor holes = from_vector<double>({0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1},
                                     {3, 4}, backend());
  check("prod with zeros", {{{3, 4}}},
        [&](const T& x) { return prod(mul(x[0], holes), {1}, false); });
  Tensor hole = from_vector<double>({1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1},
                                    {3, 4}, backend());
  check("prod with one zero, all", {{{3, 4}}},
        [&](const T& x) { return prod(mul(x[0], hole), {}, false); });
}

GRADCHECK_CASE(var, "var and std, corrections") {
  for (int64_t correction : {0, 1}) {
    std::string c = " correction " + std::to_string(correction);
    check_layouts("var" + c, {{{3, 4}}},
                  [&](const T& x) { return var(x[0], {1}, correction); });
    check_layouts("std" + c, {{{3, 4}}}, [&](const T& x) {
      return nascent::std(x[0], {}, correction);
    });
    check("var keepdim" + c, {{{2, 3, 4}}}, [&](const T& x) {
      return var(x[0], {0, 2}, correction, true);
    });
  }
}

GRADCHECK_CASE(cumsum, "each axis") {
  for (int64_t axis : {0, 1, -1}) {
    check_layouts("cumsum axis " + std::to_string(axis), {{{3, 4}}},
                  [&](const T& x) { return cumsum(x[0], axis); });
  }
  check("cumsum 0-d", {{{}}}, [](const T& x) { return cumsum(x[0], 0); });
}

}  // namespace
}  // namespace nascent::autodiff::testing
