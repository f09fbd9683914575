// Runs every registered case on every backend this build has (the CPU, and
// for the ops it fuses also the CPU without its fused kernels), and fails
// for any op of the table that has no case.
#include <map>

#include <gtest/gtest.h>

#include "conformance/registry.h"
#include "nascent/backends/cpu/backend.h"

namespace nascent::conformance {

std::vector<Case>& cases() {
  static std::vector<Case> all;
  return all;
}

namespace {

// The CPU, and for the families whose kernels cpu::Options::fused switches
// (the transformer ops and the quant family's grouped qmatmul and
// qembedding) the CPU without them, so that core's composed defaults (what
// a backend without those kernels runs) are proven too. Other ops run the
// same code on both, so they run once.
std::vector<Backend*> backends(Op op) {
  static cpu::Backend cpu;
  static cpu::Backend composed(cpu::Options{.fused = false});
  switch (info(op).family) {
    case OpFamily::Rope:
    case OpFamily::Attention:
    case OpFamily::Glu:
    case OpFamily::Quant:
      return {&cpu, &composed};
    default:
      return {&cpu};
  }
}

class OpConformance : public ::testing::TestWithParam<Op> {};

TEST_P(OpConformance, MatchesFloat64Reference) {
  int count = 0;
  for (const Case& c : cases()) {
    if (c.op != GetParam()) continue;
    ++count;
    for (Backend* b : backends(c.op)) {
      SCOPED_TRACE(b->name() + ": " + c.label);
      c.run(*b);
    }
  }
  EXPECT_GT(count, 0) << "op " << name(GetParam())
                      << " has no conformance case";
}

std::vector<Op> all_ops() {
  std::vector<Op> ops;
  for (const OpInfo& i : op_table()) ops.push_back(i.op);
  return ops;
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpConformance, ::testing::ValuesIn(all_ops()),
                         [](const ::testing::TestParamInfo<Op>& param) {
                           return std::string(name(param.param));
                         });

}  // namespace
}  // namespace nascent::conformance
