// Runs every registered case on every backend this build has (the CPU with
// and without its fused kernels), and fails for any op of the table that has
// no case.
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

// The CPU, and the CPU without its fused transformer kernels, so that core's
// composed defaults (what a backend without those kernels runs) are proven
// too.
std::vector<Backend*> backends() {
  static cpu::Backend cpu;
  static cpu::Backend composed(cpu::Options{.fused = false});
  return {&cpu, &composed};
}

class OpConformance : public ::testing::TestWithParam<Op> {};

TEST_P(OpConformance, MatchesFloat64Reference) {
  int count = 0;
  for (const Case& c : cases()) {
    if (c.op != GetParam()) continue;
    ++count;
    for (Backend* b : backends()) {
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
