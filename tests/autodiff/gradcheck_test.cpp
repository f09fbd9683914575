// Runs every registered gradcheck case, grouped by op, and fails for any
// differentiable op of the op table that has no case.
#include <gtest/gtest.h>

#include "autodiff/gradcheck.h"

namespace nascent {
// Lets gtest print an Op parameter by name, not as "2-byte object <4F-00>"
// (the same definition as conformance/registry.h's).
inline void PrintTo(Op op, std::ostream* os) {
  *os << name(op);
}
}  // namespace nascent

namespace nascent::autodiff::testing {
namespace {

class OpGradcheck : public ::testing::TestWithParam<Op> {};

TEST_P(OpGradcheck, MatchesFiniteDifferences) {
  int count = 0;
  for (const Case& c : cases()) {
    if (c.op != GetParam()) continue;
    ++count;
    SCOPED_TRACE(c.label);
    c.run();
  }
  EXPECT_GT(count, 0) << "differentiable op " << name(GetParam())
                      << " has no gradcheck case";
}

// Differentiable ops, and the others that have cases anyway (the pooling
// backwards, whose rules give gradients of gradients).
std::vector<Op> checked_ops() {
  std::vector<Op> ops;
  for (const OpInfo& i : op_table()) {
    bool has_case = false;
    for (const Case& c : cases()) has_case = has_case || c.op == i.op;
    if (i.differentiable || has_case) ops.push_back(i.op);
  }
  return ops;
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpGradcheck,
                         ::testing::ValuesIn(checked_ops()),
                         [](const ::testing::TestParamInfo<Op>& param) {
                           return std::string(name(param.param));
                         });

}  // namespace
}  // namespace nascent::autodiff::testing
