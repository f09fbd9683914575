#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "nascent/backends/cpu/backend.h"

namespace nascent::cpu {

namespace {
constexpr size_t kAlignment = 64;
}

CpuData::CpuData(size_t nbytes, Backend* owner)
    : BackendData(nbytes), owner_(owner) {
  // aligned_alloc needs a size that is a multiple of the alignment, and a
  // zero-size tensor still gets a valid pointer.
  size_t rounded = std::max<size_t>(
      kAlignment, (nbytes + kAlignment - 1) / kAlignment * kAlignment);
  ptr_ = static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded));
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
      owner_(owner),
      keep_(std::move(keep)) {}

CpuData::~CpuData() {
  if (persistent) owner_->persistent_ -= int64_t(nbytes());
  if (wrapped()) return;
  owner_->account(-int64_t(nbytes()));
  std::free(ptr_);
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

MemoryStats Backend::memory_stats() const {
  MemoryStats s;
  s.allocated_bytes = size_t(allocated_.load());
  s.persistent_bytes = size_t(persistent_.load());
  s.peak_bytes = size_t(peak_.load());
  return s;
}

}  // namespace nascent::cpu
