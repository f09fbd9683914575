#include <cstdlib>

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

// Large freed blocks are kept for the next tensor of the same size class and
// reused; small ones go straight back to malloc; trim() empties the cache.
TEST(CpuMemory, LargeBlocksAreCachedReusedAndTrimmed) {
  Backend cpu;
  const int64_t n = int64_t(1) << 20;  // 4 MiB of f32.
  const std::byte* first = nullptr;
  {
    Tensor a = Tensor::empty({n}, DType::f32, cpu);
    first = byte_ptr(a);
    EXPECT_EQ(cpu.memory_stats().cached_bytes, 0u);
  }
  EXPECT_EQ(cpu.memory_stats().cached_bytes, size_t(n) * 4);
  EXPECT_EQ(cpu.memory_stats().allocated_bytes, 0u);
  {
    // A slightly smaller request falls in the same class and reuses it.
    Tensor b = Tensor::empty({n - 1000}, DType::f32, cpu);
    EXPECT_EQ(byte_ptr(b), first);
    EXPECT_EQ(cpu.memory_stats().cached_bytes, 0u);
    Tensor c = full({n}, 2.5f, cpu);  // A second block: none cached now.
    EXPECT_NE(byte_ptr(c), first);
    EXPECT_EQ(c.to_vector<float>()[size_t(n - 1)], 2.5f);
  }
  EXPECT_GE(cpu.memory_stats().cached_bytes, size_t(2 * n * 4) - 4000);
  { Tensor small = zeros({1000}, cpu); }
  const size_t cached = cpu.memory_stats().cached_bytes;
  EXPECT_LT(cached, size_t(2 * n * 4) + 1);  // The small block was freed.
  cpu.trim();
  EXPECT_EQ(cpu.memory_stats().cached_bytes, 0u);
}

TEST(CpuMemory, CacheStaysUnderItsLimit) {
  setenv("NASCENT_CPU_CACHE_MB", "5", 1);
  Backend cpu;
  unsetenv("NASCENT_CPU_CACHE_MB");
  {
    Tensor a = zeros({int64_t(1) << 20}, cpu);  // 4 MiB
    Tensor b = zeros({int64_t(1) << 19}, cpu);  // 2 MiB
  }
  // Only one of the two fits in 5 MiB.
  const size_t cached = cpu.memory_stats().cached_bytes;
  EXPECT_TRUE(cached == (size_t(4) << 20) || cached == (size_t(2) << 20))
      << cached;
}

}  // namespace
}  // namespace nascent::cpu
