// The conformance suite on the WebGPU backend: every registered case of the
// ops the backend runs, each compared with its float64 reference. The cases
// make inputs and read results through f64, which WebGPU lacks; they run
// through HostFallbackBackend, which hands those calls (and calls with f16,
// bf16, i64 outside takes_i64(), or an op of not_yet()) to the CPU, and the
// test requires that the op under test ran on the GPU. The ops of kNotYet must
// raise BackendError naming the op on the bare backend (backend_test.cpp), so
// the list cannot outlive the ops' arrival unnoticed; arange's cases use only
// i64 and f64, so backend_test.cpp compares it with the CPU. Without an
// adapter every
// op reports that it was skipped and why.
#include <string>

#include <gtest/gtest.h>

#include "conformance/registry.h"
#include "not_yet.h"
#include "webgpu_test.h"

namespace nascent::webgpu {
namespace {

class WebGpuConformance : public ::testing::TestWithParam<Op> {};

TEST_P(WebGpuConformance, MatchesFloat64Reference) {
  Backend* gpu = testing::shared_backend();
  if (gpu == nullptr) GTEST_SKIP() << testing::no_adapter_reason();
  static cpu::Backend& cpu = *new cpu::Backend();
  testing::HostFallbackBackend backend(*gpu, cpu, testing::not_yet(),
                                       testing::takes_i64());
  int count = 0;
  for (const conformance::Case& c : conformance::cases()) {
    if (c.op != GetParam()) continue;
    ++count;
    SCOPED_TRACE(backend.name() + ": " + c.label);
    c.run(backend);
  }
  EXPECT_GT(count, 0) << "op " << name(GetParam())
                      << " has no conformance case";
  EXPECT_GT(backend.gpu_calls(GetParam()), 0)
      << name(GetParam()) << " never ran on the WebGPU backend ("
      << backend.cpu_calls(GetParam())
      << " calls with dtypes it lacks went to the CPU)";
  RecordProperty("gpu_calls", backend.gpu_calls(GetParam()));
  RecordProperty("cpu_calls", backend.cpu_calls(GetParam()));
}

std::vector<Op> done_ops() {
  std::vector<Op> ops;
  for (const OpInfo& i : op_table()) {
    if (testing::not_yet().count(i.op) == 0 &&
        testing::tested_elsewhere().count(i.op) == 0) {
      ops.push_back(i.op);
    }
  }
  return ops;
}

INSTANTIATE_TEST_SUITE_P(DoneOps, WebGpuConformance,
                         ::testing::ValuesIn(done_ops()),
                         [](const ::testing::TestParamInfo<Op>& param) {
                           return std::string(name(param.param));
                         });

}  // namespace
}  // namespace nascent::webgpu
