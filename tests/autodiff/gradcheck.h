// Float64 gradient checks (PyTorch's gradcheck and gradgradcheck): the
// analytic gradients of autodiff::grad against central finite differences,
// on random inputs laid out contiguous, transposed, sliced or broadcast.
//
// Every differentiable op of the op table needs a case, registered from the
// *_cases.cpp files in this folder:
//   GRADCHECK_CASE(exp, "all layouts") { check("exp", {{{3, 4}}}, fn); }
// gradcheck_test.cpp fails for any differentiable op without one.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "conformance/reference.h"
#include "nascent/autodiff/autodiff.h"
#include "nascent/core/ops.h"

namespace nascent::autodiff::testing {

using conformance::kLayouts;
using conformance::Layout;

// The autodiff backend over a CPU backend, shared by the tests.
autodiff::Backend& backend();

// One input of a checked function: its shape as the function sees it, its
// layout in memory, and the range of its random values (moved out of
// (-gap, gap), to keep away from kinks at 0).
struct Input {
  Shape shape;
  Layout layout = Layout::contiguous;
  double low = -2.0;
  double high = 2.0;
  double gap = 0.0;
};

struct Options {
  double eps = 1e-6;
  double atol = 1e-6;
  double rtol = 1e-5;
  bool second_order = true;  // Also check gradients of gradients.
};

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// Checks f's gradients with respect to each input: f gets f64 views of the
// inputs' shapes and layouts over leaves that require grad.
void check(const std::string& label, const std::vector<Input>& inputs,
           const Fn& f, Options options = {});
// The same for every layout (all inputs take the layout together).
void check_layouts(const std::string& label, std::vector<Input> inputs,
                   const Fn& f, Options options = {});

// A random f64 tensor of the autodiff backend without history.
Tensor random(const Shape& shape, uint64_t seed, double low = -2.0,
              double high = 2.0);

struct Case {
  Op op;
  std::string label;
  void (*run)();
};
std::vector<Case>& cases();

struct Registrar {
  Registrar(Op op, const char* label, void (*fn)()) {
    cases().push_back(Case{op, label, fn});
  }
};

}  // namespace nascent::autodiff::testing

#define GRADCHECK_CONCAT_INNER(a, b) a##b
#define GRADCHECK_CONCAT(a, b) GRADCHECK_CONCAT_INNER(a, b)
#define GRADCHECK_CASE(op_name, label)                                         \
  static void GRADCHECK_CONCAT(gradcheck_case_, __LINE__)();                   \
  static const nascent::autodiff::testing::Registrar GRADCHECK_CONCAT(         \
      gradcheck_reg_, __LINE__)(nascent::Op::op_name, label,                   \
                                &GRADCHECK_CONCAT(gradcheck_case_, __LINE__)); \
  static void GRADCHECK_CONCAT(gradcheck_case_, __LINE__)()
