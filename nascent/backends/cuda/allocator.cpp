#include "nascent/backends/cuda/allocator.h"

#include <algorithm>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "nascent/core/error.h"

namespace nascent::cuda {

namespace {

constexpr size_t kRound = 512;             // Allocation granularity.
constexpr size_t kSmallLimit = 1 << 20;    // Largest small-pool block.
constexpr size_t kSmallSegment = 2 << 20;  // Segment of the small pool.
constexpr size_t kLargeRound = 2 << 20;    // Large segments round to this.
// Medium requests share a 20 MiB segment instead of one each.
constexpr size_t kMediumLimit = 10 << 20;
constexpr size_t kMediumSegment = 20 << 20;

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

std::string mib(size_t bytes) {
  return fmt::format("{:.1f} MiB", double(bytes) / double(1 << 20));
}

}  // namespace

CachingAllocator::CachingAllocator(int device, void (*sync)(void*),
                                   void* sync_arg)
    : device_(device), sync_(sync), sync_arg_(sync_arg) {}

CachingAllocator::~CachingAllocator() {
  // Tensors hold the context (and so this allocator) alive: by now every
  // block is free. Errors are ignored: the runtime may be shutting down.
  std::lock_guard<std::mutex> lock(mutex_);
  for (Block* head : segments_) {
    cudaFree(head->ptr);
    for (Block* b = head; b != nullptr;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
  }
}

Block* CachingAllocator::try_cached(Pool& pool, size_t size, bool small) {
  Block key;
  key.size = size;
  key.ptr = nullptr;
  auto it = pool.lower_bound(&key);
  if (it == pool.end()) return nullptr;
  Block* b = *it;
  // A huge free block is not cut down for a small request: it would stay
  // fragmented (PyTorch's rule for oversize blocks).
  if (!small && b->size > size * 4 && b->size - size > (64u << 20)) {
    return nullptr;
  }
  pool.erase(it);
  const size_t rest = b->size - size;
  if (rest >= (small ? kRound : kSmallLimit + 1)) {
    auto* r = new Block;
    r->ptr = b->ptr + size;
    r->size = rest;
    r->small = small;
    r->prev = b;
    r->next = b->next;
    if (b->next != nullptr) b->next->prev = r;
    b->next = r;
    b->size = size;
    pool.insert(r);
  }
  return b;
}

Block* CachingAllocator::new_segment(size_t segment_size, bool small) {
  void* ptr = nullptr;
  cudaError_t e = cudaMalloc(&ptr, segment_size);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // Clear the sticky-free error state.
    return nullptr;
  }
  auto* b = new Block;
  b->ptr = static_cast<std::byte*>(ptr);
  b->size = segment_size;
  b->small = small;
  segments_.push_back(b);
  reserved_ += segment_size;
  return b;
}

Block* CachingAllocator::allocate(size_t nbytes) {
  if (nbytes == 0) return nullptr;
  if (nbytes > (size_t(1) << 60)) {
    throw OutOfMemory(
        fmt::format("cuda:{}: cannot allocate {} bytes: larger than any device",
                    device_, nbytes));
  }
  const size_t size = round_up(nbytes, kRound);
  const bool small = size <= kSmallLimit;
  Pool& pool = small ? small_free_ : large_free_;
  std::lock_guard<std::mutex> lock(mutex_);
  Block* b = try_cached(pool, size, small);
  if (b == nullptr) {
    const size_t segment = small                  ? kSmallSegment
                           : size <= kMediumLimit ? kMediumSegment
                                                  : round_up(size, kLargeRound);
    Block* head = new_segment(segment, small);
    if (head == nullptr) {
      trim_locked();
      head = new_segment(segment, small);
    }
    if (head == nullptr) {
      size_t free_bytes = 0, total = 0;
      cudaMemGetInfo(&free_bytes, &total);
      (void)cudaGetLastError();
      throw OutOfMemory(fmt::format(
          "cuda:{}: out of memory: requested {} bytes ({}), {} free of {} on "
          "the device after returning cached blocks; nascent holds {} in "
          "live tensors",
          device_, nbytes, mib(nbytes), mib(free_bytes), mib(total),
          mib(in_use_)));
    }
    pool.insert(head);
    b = try_cached(pool, size, small);
  }
  b->allocated = true;
  b->requested = nbytes;
  in_use_ += b->size;
  allocated_ += nbytes;
  peak_ = std::max(peak_, allocated_);
  return b;
}

void CachingAllocator::free(Block* b) {
  if (b == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  Pool& pool = b->small ? small_free_ : large_free_;
  in_use_ -= b->size;
  allocated_ -= b->requested;
  if (b->persistent) persistent_ -= b->requested;
  b->allocated = false;
  b->persistent = false;
  b->requested = 0;
  // Merge with free neighbours of the same segment.
  if (b->prev != nullptr && !b->prev->allocated) {
    Block* p = b->prev;
    pool.erase(p);
    p->size += b->size;
    p->next = b->next;
    if (b->next != nullptr) b->next->prev = p;
    delete b;
    b = p;
  }
  if (b->next != nullptr && !b->next->allocated) {
    Block* n = b->next;
    pool.erase(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next != nullptr) n->next->prev = b;
    delete n;
  }
  pool.insert(b);
}

void CachingAllocator::set_persistent(Block* b, bool persistent) {
  if (b == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (b->persistent == persistent) return;
  b->persistent = persistent;
  if (persistent) {
    persistent_ += b->requested;
  } else {
    persistent_ -= b->requested;
  }
}

void CachingAllocator::trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  trim_locked();
}

void CachingAllocator::trim_locked() {
  // Free blocks may still be read by queued kernels until the stream drains.
  sync_(sync_arg_);
  std::vector<Block*> kept;
  for (Block* head : segments_) {
    if (head->allocated || head->next != nullptr) {
      kept.push_back(head);
      continue;
    }
    (head->small ? small_free_ : large_free_).erase(head);
    reserved_ -= head->size;
    cudaFree(head->ptr);
    delete head;
  }
  segments_ = std::move(kept);
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  MemoryStats s;
  s.allocated_bytes = allocated_;
  s.cached_bytes = reserved_ - in_use_;
  s.persistent_bytes = persistent_;
  s.peak_bytes = peak_;
  return s;
}

size_t CachingAllocator::reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reserved_;
}

}  // namespace nascent::cuda
