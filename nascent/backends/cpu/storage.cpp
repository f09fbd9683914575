// Host storage of the CPU backend, with a cache of freed large blocks.
//
// A fresh large block costs a page fault per 4 KiB page on first touch
// (glibc maps blocks above its mmap threshold anew on every malloc and
// unmaps them on free): for a 64 MB output that is more time than an add
// kernel spends writing it. So blocks of kCacheMin bytes or more are rounded
// to a size class and, when freed, kept for the next tensor of that class
// (training and generation loops allocate the same shapes every step), up
// to a byte limit; trim() hands them all back. Large blocks also ask for
// transparent huge pages, which cut the first-touch faults by 512x.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <sys/mman.h>

#include "nascent/backends/cpu/backend.h"

namespace nascent::cpu {

namespace {

constexpr size_t kAlignment = 64;
// From 64 KiB: glibc serves 128 KiB blocks (an MLP's [64, 512] activations
// and their gradients) with mmap or from a heap top it trims on free, so
// each one faulted its pages in again every step (30 faults per MLP step,
// 5-10% of its time); below 64 KiB malloc keeps its memory.
constexpr size_t kCacheMin = size_t(64) << 10;
constexpr size_t kHugePage = size_t(2) << 20;

// Sizes from kCacheMin up round to a multiple of an eighth of the power of
// two below them: at most 12.5% more than asked, and few distinct classes.
size_t size_class(size_t nbytes) {
  if (nbytes < kCacheMin) {
    return std::max(kAlignment,
                    (nbytes + kAlignment - 1) / kAlignment * kAlignment);
  }
  size_t floor = kCacheMin;
  while (floor <= nbytes / 2) floor *= 2;
  const size_t step = floor / 8;
  return (nbytes + step - 1) / step * step;
}

size_t cache_limit() {
  const char* env = std::getenv("NASCENT_CPU_CACHE_MB");
  if (env != nullptr) return size_t(std::strtoull(env, nullptr, 10)) << 20;
  return size_t(2) << 30;
}

std::byte* allocate_block(size_t capacity) {
  // Huge-page-sized blocks are aligned to 2 MiB so the kernel can back them
  // with huge pages.
  const size_t align = capacity >= 4 * kHugePage ? kHugePage : kAlignment;
  void* p = std::aligned_alloc(align, (capacity + align - 1) / align * align);
#ifdef MADV_HUGEPAGE
  if (p != nullptr && align == kHugePage) madvise(p, capacity, MADV_HUGEPAGE);
#endif
  return static_cast<std::byte*>(p);
}

}  // namespace

HostCache::HostCache() : limit_(cache_limit()) {}

HostCache::~HostCache() {
  trim();
}

std::byte* HostCache::take(size_t nbytes, size_t& capacity) {
  capacity = size_class(nbytes);
  if (capacity >= kCacheMin) {
    std::lock_guard<std::mutex> lock(mutex_);
    // The block freed last (the end of its size's range): it is the one
    // most likely still in cache, so the writes into it do not first fetch
    // cold lines from memory. (The oldest, which find() gives, made a
    // training step's element-wise chains run at DRAM speed.)
    auto it = free_.upper_bound(capacity);
    if (it != free_.begin() && (--it)->first == capacity) {
      std::byte* p = it->second;
      free_.erase(it);
      cached_ -= capacity;
      return p;
    }
  }
  std::byte* p = allocate_block(capacity);
  if (p == nullptr && cached_bytes() > 0) {
    trim();  // Cached blocks of other sizes may be what is missing.
    p = allocate_block(capacity);
  }
  return p;
}

void HostCache::give(std::byte* ptr, size_t capacity) {
  if (capacity >= kCacheMin) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cached_ + capacity <= limit_) {
      free_.emplace(capacity, ptr);
      cached_ += capacity;
      return;
    }
  }
  std::free(ptr);
}

void HostCache::trim() {
  std::multimap<size_t, std::byte*> blocks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks.swap(free_);
    cached_ = 0;
  }
  for (auto& [size, p] : blocks) std::free(p);
}

size_t HostCache::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_;
}

CpuData::CpuData(size_t nbytes, Backend* owner)
    : BackendData(nbytes), owner_(owner) {
  ptr_ = owner_->cache_.take(nbytes, capacity_);
  if (ptr_ == nullptr) {
    throw OutOfMemory(
        fmt::format("cpu: could not allocate {} bytes of host memory", nbytes));
  }
  owner_->account(int64_t(nbytes));
}

CpuData::CpuData(std::shared_ptr<const void> keep, const void* data,
                 size_t nbytes, Backend* owner)
    : BackendData(nbytes),
      // Wrapped memory is only read (see Backend::wrap).
      ptr_(const_cast<std::byte*>(static_cast<const std::byte*>(data))),
      capacity_(0),
      owner_(owner),
      keep_(std::move(keep)) {}

CpuData::~CpuData() {
  if (persistent) owner_->persistent_ -= int64_t(nbytes());
  if (wrapped()) return;
  owner_->account(-int64_t(nbytes()));
  owner_->cache_.give(ptr_, capacity_);
}

void Backend::account(int64_t delta) {
  int64_t now = allocated_ += delta;
  int64_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
}

std::shared_ptr<BackendData> Backend::allocate(size_t nbytes) {
  return std::make_shared<CpuData>(nbytes, this);
}

std::shared_ptr<BackendData> Backend::upload(const void* host, size_t nbytes) {
  auto data = std::make_shared<CpuData>(nbytes, this);
  if (nbytes > 0) std::memcpy(data->bytes(), host, nbytes);
  return data;
}

std::shared_ptr<BackendData> Backend::wrap(std::shared_ptr<const void> owner,
                                           const void* data, size_t nbytes) {
  if (owner == nullptr || (data == nullptr && nbytes > 0)) {
    throw ValueError(fmt::format(
        "cpu: wrap needs an owner and a data pointer for {} bytes", nbytes));
  }
  return std::make_shared<CpuData>(std::move(owner), data, nbytes, this);
}

HostBytes Backend::materialize(const Tensor& t) {
  auto* d = static_cast<CpuData*>(t.data().get());
  return HostBytes{t.data(), d->bytes(), d->nbytes()};
}

void Backend::set_persistent(const Tensor& t, bool persistent) {
  auto* d = static_cast<CpuData*>(t.data().get());
  if (d->persistent == persistent) return;
  d->persistent = persistent;
  persistent_ += persistent ? int64_t(d->nbytes()) : -int64_t(d->nbytes());
}

bool Backend::is_persistent(const Tensor& t) const {
  return static_cast<CpuData*>(t.data().get())->persistent;
}

void Backend::trim() {
  cache_.trim();
}

MemoryStats Backend::memory_stats() const {
  MemoryStats s;
  s.allocated_bytes = size_t(allocated_.load());
  s.cached_bytes = cache_.cached_bytes();
  s.persistent_bytes = size_t(persistent_.load());
  s.peak_bytes = size_t(peak_.load());
  return s;
}

}  // namespace nascent::cpu
