// The parts of libhwy that Highway's headers can call in a wasm build (Debian
// has no wasm build of libhwy): hwy::Abort (HWY_ASSERT), the target table and
// the aligned allocator (hwy::AllocateAligned). Only one target, HWY_WASM, is
// compiled, so it is the only one supported and the chosen one.
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"
#include "hwy/targets.h"

namespace hwy {

HWY_NORETURN void HWY_FORMAT(3, 4)
    Abort(const char* file, int line, const char* format, ...) {
  std::fprintf(stderr, "Abort at %s:%d: ", file, line);
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
  std::abort();
}

int64_t SupportedTargets() {
  return HWY_TARGETS;
}

ChosenTarget& GetChosenTarget() {
  static ChosenTarget chosen;
  return chosen;
}

// Tests that run kernels on each compiled target call this; with one target
// compiled, only it (or the reset to all, targets == 0) can be chosen.
void SetSupportedTargetsForTest(int64_t targets) {
  GetChosenTarget().Update(targets == 0 ? SupportedTargets()
                                        : targets & SupportedTargets());
}

namespace {

// Stored just below each aligned payload, so freeing finds the block.
struct BlockHeader {
  void* allocated;
  size_t payload_size;
};

BlockHeader* header_of(const void* payload) {
  return static_cast<BlockHeader*>(const_cast<void*>(payload)) - 1;
}

}  // namespace

void* AllocateAlignedBytes(size_t payload_size, AllocPtr alloc_ptr,
                           void* opaque_ptr) {
  // Room for the header and for moving the payload to the next boundary.
  constexpr size_t kSlack = sizeof(BlockHeader) + HWY_ALIGNMENT;
  if (payload_size > SIZE_MAX - kSlack) return nullptr;
  size_t total = payload_size + kSlack;
  void* allocated =
      alloc_ptr != nullptr ? alloc_ptr(opaque_ptr, total) : std::malloc(total);
  if (allocated == nullptr) return nullptr;
  uintptr_t start = reinterpret_cast<uintptr_t>(allocated);
  uintptr_t payload = (start + sizeof(BlockHeader) + HWY_ALIGNMENT - 1) &
                      ~uintptr_t{HWY_ALIGNMENT - 1};
  BlockHeader* header = header_of(reinterpret_cast<void*>(payload));
  header->allocated = allocated;
  header->payload_size = payload_size;
  return reinterpret_cast<void*>(payload);
}

void FreeAlignedBytes(const void* aligned_pointer, FreePtr free_ptr,
                      void* opaque_ptr) {
  if (aligned_pointer == nullptr) return;
  void* allocated = header_of(aligned_pointer)->allocated;
  if (free_ptr != nullptr) {
    free_ptr(opaque_ptr, allocated);
  } else {
    std::free(allocated);
  }
}

void AlignedDeleter::DeleteAlignedArray(void* aligned_pointer, FreePtr free_ptr,
                                        void* opaque_ptr,
                                        ArrayDeleter deleter) {
  if (aligned_pointer == nullptr) return;
  if (deleter != nullptr) {
    deleter(aligned_pointer, header_of(aligned_pointer)->payload_size);
  }
  FreeAlignedBytes(aligned_pointer, free_ptr, opaque_ptr);
}

}  // namespace hwy
