#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"

namespace nascent::cpu {
namespace {

TEST(CpuMemory, RaiiReturnsMemoryAndStatsTrackIt) {
  Backend cpu;
  EXPECT_EQ(cpu.memory_stats().allocated_bytes, 0u);
  {
    Tensor a = zeros({1024}, cpu);
    Tensor view = a.slice(0, 0, 10);  // Shares the storage.
    EXPECT_EQ(cpu.memory_stats().allocated_bytes, 4096u);
    cpu.set_persistent(view, true);
    EXPECT_TRUE(cpu.is_persistent(a));
    EXPECT_EQ(cpu.memory_stats().persistent_bytes, 4096u);
    cpu.release(a);
    EXPECT_FALSE(a.defined());
    EXPECT_EQ(cpu.memory_stats().allocated_bytes, 4096u);  // view holds it.
  }
  MemoryStats s = cpu.memory_stats();
  EXPECT_EQ(s.allocated_bytes, 0u);
  EXPECT_EQ(s.persistent_bytes, 0u);
  EXPECT_EQ(s.peak_bytes, 4096u);
}

TEST(CpuMemory, MaterializeHandsOutTheBufferWithoutCopy) {
  Backend cpu;
  Tensor a = arange(int64_t(10), cpu, DType::i64);
  HostBytes h = cpu.materialize(a);
  EXPECT_EQ(h.data, reinterpret_cast<const std::byte*>(data_ptr<int64_t>(a)));
  EXPECT_EQ(h.size, 80u);
}

TEST(CpuMemory, HugeAllocationRaisesOutOfMemoryOrValueError) {
  Backend cpu;
  EXPECT_THROW(Tensor::empty({int64_t(1) << 62}, DType::f32, cpu), Error);
  EXPECT_THROW(Tensor::empty({1 << 30, 1 << 30, 1 << 30}, DType::f32, cpu),
               ValueError);
}

}  // namespace
}  // namespace nascent::cpu
