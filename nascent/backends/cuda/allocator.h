// A stream-ordered caching allocator for one device (after PyTorch's
// CUDACachingAllocator, reduced to one stream).
//
// Requests are rounded up to 512 bytes. Blocks up to 1 MiB come from 2 MiB
// segments (the small pool), larger ones from segments rounded up to 2 MiB
// (the large pool). A free block is found best-fit in its pool and split when
// the rest is worth keeping; a freed block merges with free neighbours of its
// segment. Every op of the backend runs on one stream, so a block freed on
// the host may be handed out again at once: the next op to use it is ordered
// after the last op that read it. cudaMalloc runs only when no cached block
// fits; when it fails, trim() returns every wholly free segment and the
// allocation is tried once more before OutOfMemory is raised.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <set>
#include <vector>

#include "nascent/core/backend.h"

namespace nascent::cuda {

struct Block {
  std::byte* ptr = nullptr;
  size_t size = 0;       // Bytes of the block (rounded).
  size_t requested = 0;  // Bytes asked for, while allocated.
  bool allocated = false;
  bool persistent = false;
  bool small = false;     // From the small pool.
  Block* prev = nullptr;  // Neighbours inside the same segment.
  Block* next = nullptr;
};

class CachingAllocator {
 public:
  // `device` names the GPU in error messages; `sync` waits for the stream
  // (trim must not hand memory back while kernels may still use it).
  CachingAllocator(int device, void (*sync)(void*), void* sync_arg);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least nbytes (a null block for 0 bytes). Throws
  // OutOfMemory stating the request and the free device memory.
  Block* allocate(size_t nbytes);
  void free(Block* block);
  void set_persistent(Block* block, bool persistent);
  // Returns every wholly free segment to the driver.
  void trim();
  MemoryStats stats() const;
  // Bytes obtained from cudaMalloc and not yet returned.
  size_t reserved_bytes() const;

 private:
  struct BySize {
    bool operator()(const Block* a, const Block* b) const {
      return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
  };
  using Pool = std::set<Block*, BySize>;

  Block* try_cached(Pool& pool, size_t size, bool small);
  Block* new_segment(size_t segment_size, bool small);
  void trim_locked();

  int device_;
  void (*sync_)(void*);
  void* sync_arg_;
  mutable std::mutex mutex_;
  Pool small_free_, large_free_;
  std::vector<Block*> segments_;  // First block of each segment.
  size_t reserved_ = 0;           // cudaMalloc'd bytes.
  size_t in_use_ = 0;             // Bytes of allocated blocks (rounded).
  size_t allocated_ = 0;          // Requested bytes of allocated blocks.
  size_t persistent_ = 0;
  size_t peak_ = 0;
};

}  // namespace nascent::cuda
