// The conformance suite on the CUDA backend: every registered case of every
// op of the table runs on the GPU, where it compares with its float64
// reference, and through CrossCheckBackend, which also runs each op on the
// CPU backend and compares the two. NASCENT_CUDA_CROSS_CHECK=0 runs the
// cases on the bare CUDA backend (for compute-sanitizer, which is slow).
// Without a GPU every op reports that it was skipped and why.
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "conformance/registry.h"
#include "cross_check.h"

namespace nascent::cuda {
namespace {

bool cross_check() {
  const char* v = std::getenv("NASCENT_CUDA_CROSS_CHECK");
  return v == nullptr || std::string(v) != "0";
}

class CudaConformance : public ::testing::TestWithParam<Op> {};

TEST_P(CudaConformance, MatchesFloat64ReferenceAndCpu) {
  if (Backend::device_count() == 0) {
    GTEST_SKIP() << "no CUDA device: the driver reports none, so the CUDA "
                    "backend's conformance cases cannot run here";
  }
  // Never destroyed: the CUDA runtime may be gone by the time statics are.
  static Backend& gpu = *new Backend(0);
  static cpu::Backend& cpu = *new cpu::Backend();
  testing::CrossCheckBackend checked(gpu, cpu);
  nascent::Backend& backend =
      cross_check() ? static_cast<nascent::Backend&>(checked) : gpu;
  int count = 0;
  for (const conformance::Case& c : conformance::cases()) {
    if (c.op != GetParam()) continue;
    ++count;
    SCOPED_TRACE(backend.name() + ": " + c.label);
    c.run(backend);
  }
  EXPECT_GT(count, 0) << "op " << name(GetParam())
                      << " has no conformance case";
  if (cross_check()) {
    EXPECT_GT(checked.compared(), 0)
        << "no op was cross-checked against the CPU for " << name(GetParam());
  }
}

std::vector<Op> all_ops() {
  std::vector<Op> ops;
  for (const OpInfo& i : op_table()) ops.push_back(i.op);
  return ops;
}

INSTANTIATE_TEST_SUITE_P(AllOps, CudaConformance,
                         ::testing::ValuesIn(all_ops()),
                         [](const ::testing::TestParamInfo<Op>& param) {
                           return std::string(name(param.param));
                         });

}  // namespace
}  // namespace nascent::cuda
