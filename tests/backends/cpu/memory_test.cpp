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

// Large freed blocks are kept for the next allocation of their size class
// (a training step reallocates the same sizes every step; fresh mmaps fault
// their pages in each time).
TEST(CpuMemory, LargeBlocksAreCachedUntilTrim) {
  Backend cpu;
  const std::byte* first;
  {
    Tensor a = zeros({1 << 20}, cpu);  // 4 MiB.
    first = cpu.materialize(a).data;
  }
  MemoryStats s = cpu.memory_stats();
  EXPECT_EQ(s.allocated_bytes, 0u);
  EXPECT_EQ(s.cached_bytes, size_t(4) << 20);
  {
    // A slightly smaller size shares the size class and gets the block.
    Tensor b = Tensor::empty({(1 << 20) - 1000}, DType::f32, cpu);
    EXPECT_EQ(cpu.materialize(b).data, first);
    EXPECT_EQ(cpu.memory_stats().cached_bytes, 0u);
  }
  { Tensor small = zeros({1000}, cpu); }  // Small blocks go back to malloc.
  EXPECT_EQ(cpu.memory_stats().cached_bytes, size_t(4) << 20);
  cpu.trim();
  EXPECT_EQ(cpu.memory_stats().cached_bytes, 0u);
  // Over the limit, freed blocks are not kept.
  cpu.set_cache_limit(size_t(1) << 20);
  { Tensor c = zeros({1 << 20}, cpu); }
  EXPECT_EQ(cpu.memory_stats().cached_bytes, 0u);
  { Tensor d = zeros({1 << 17}, cpu); }  // 512 KiB fits.
  EXPECT_EQ(cpu.memory_stats().cached_bytes, size_t(512) << 10);
  cpu.set_cache_limit(0);
  EXPECT_EQ(cpu.memory_stats().cached_bytes, 0u);
}

}  // namespace
}  // namespace nascent::cpu
