#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "nascent/backends/cpu/backend.h"

namespace nascent::cpu {

namespace {

constexpr size_t kAlignment = 64;
// Blocks from here up go through the cache; smaller ones malloc serves well.
constexpr size_t kCacheMin = size_t(256) << 10;

// The block size for `nbytes`: a multiple of the alignment and, for cached
// sizes, rounded up to a sixteenth of their power of two, so that sizes
// that differ a little share blocks (at most 1/16 is wasted).
size_t block_size(size_t nbytes) {
  size_t rounded = std::max<size_t>(
      kAlignment, (nbytes + kAlignment - 1) / kAlignment * kAlignment);
  if (rounded < kCacheMin) return rounded;
  size_t pow2 = kCacheMin;
  while (pow2 < rounded) pow2 *= 2;
  size_t step = pow2 / 16;
  return (rounded + step - 1) / step * step;
}

size_t default_cache_limit() {
  const char* env = std::getenv("NASCENT_CPU_CACHE_MB");
  if (env && *env) return size_t(std::strtoull(env, nullptr, 10)) << 20;
  return size_t(1) << 30;
}

}  // namespace

CpuData::CpuData(size_t nbytes, Backend* owner)
    : BackendData(nbytes), block_(block_size(nbytes)), owner_(owner) {
  // aligned_alloc needs a size that is a multiple of the alignment, and a
  // zero-size tensor still gets a valid pointer.
  ptr_ = block_ >= kCacheMin ? owner_->take_cached(block_) : nullptr;
  if (ptr_ == nullptr) {
    ptr_ = static_cast<std::byte*>(std::aligned_alloc(kAlignment, block_));
  }
  if (ptr_ == nullptr) {
    // The cache may hold what the system lacks.
    owner_->trim();
    ptr_ = static_cast<std::byte*>(std::aligned_alloc(kAlignment, block_));
  }
  if (ptr_ == nullptr) {
    throw OutOfMemory(
        fmt::format("cpu: could not allocate {} bytes of host memory", nbytes));
  }
  owner_->account(int64_t(nbytes));
}

CpuData::~CpuData() {
  owner_->account(-int64_t(nbytes()));
  if (persistent) owner_->persistent_ -= int64_t(nbytes());
  if (block_ >= kCacheMin) {
    owner_->give_back(ptr_, block_);
  } else {
    std::free(ptr_);
  }
}

Backend::Backend() : cache_limit_(default_cache_limit()) {}

Backend::~Backend() {
  trim();
}

std::byte* Backend::take_cached(size_t block) {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  auto it = cache_.find(block);
  if (it == cache_.end() || it->second.empty()) return nullptr;
  std::byte* p = it->second.back();
  it->second.pop_back();
  cached_bytes_ -= block;
  return p;
}

void Backend::give_back(std::byte* ptr, size_t block) {
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cached_bytes_ + block <= cache_limit_) {
      cache_[block].push_back(ptr);
      cached_bytes_ += block;
      return;
    }
  }
  std::free(ptr);
}

void Backend::trim() {
  std::map<size_t, std::vector<std::byte*>> blocks;
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    blocks.swap(cache_);
    cached_bytes_ = 0;
  }
  for (auto& [size, ptrs] : blocks) {
    for (std::byte* p : ptrs) std::free(p);
  }
}

void Backend::set_cache_limit(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    cache_limit_ = bytes;
    if (cached_bytes_ <= cache_limit_) return;
  }
  trim();
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

MemoryStats Backend::memory_stats() const {
  MemoryStats s;
  s.allocated_bytes = size_t(allocated_.load());
  s.persistent_bytes = size_t(persistent_.load());
  s.peak_bytes = size_t(peak_.load());
  std::lock_guard<std::mutex> lock(cache_mutex_);
  s.cached_bytes = cached_bytes_;
  return s;
}

}  // namespace nascent::cpu
