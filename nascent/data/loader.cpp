#include "nascent/data/loader.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "nascent/core/ops.h"
#include "nascent/core/random.h"

namespace nascent::data {

Shard shard_of(int64_t total, int rank, int world_size) {
  if (world_size < 1 || rank < 0 || rank >= world_size || total < 0) {
    throw ValueError(fmt::format(
        "shard_of: rank {} of {} ranks, {} examples: need 0 <= rank < world "
        "and total >= 0",
        rank, world_size, total));
  }
  const int64_t each = total / world_size, extra = total % world_size;
  Shard s;
  s.count = each + (rank < extra ? 1 : 0);
  s.begin = rank * each + std::min<int64_t>(rank, extra);
  return s;
}

DataLoader::DataLoader(const ImageDataset& dataset, LoaderOptions options,
                       Backend& backend)
    : dataset_(&dataset), options_(options), backend_(&backend) {
  if (options_.batch_size <= 0) {
    throw ValueError(fmt::format("DataLoader: batch size {} is not positive",
                                 options_.batch_size));
  }
  if (!(options_.std > 0.0f)) {
    throw ValueError(
        fmt::format("DataLoader: std {} is not positive", options_.std));
  }
  shard_of(0, options_.rank, options_.world_size);  // Checks them.
  for (int p = 0; p < 256; ++p) {
    lut_[p] = (float(p) / 255.0f - options_.mean) / options_.std;
  }
}

int64_t DataLoader::num_batches() const {
  const int64_t n = dataset_->size(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

std::vector<int64_t> DataLoader::order(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(dataset_->size()));
  std::iota(order.begin(), order.end(), int64_t(0));
  if (!options_.shuffle) return order;
  // Fisher-Yates; swap i draws from Philox block (epoch, i), so the
  // permutation is a pure function of (seed, epoch). 64 random bits make
  // the modulo's bias negligible (n / 2^64).
  for (int64_t i = int64_t(order.size()) - 1; i > 0; --i) {
    auto r = philox4x32((uint64_t(epoch) << 32) | uint64_t(i), options_.seed);
    uint64_t bits = (uint64_t(r[0]) << 32) | r[1];
    int64_t j = int64_t(bits % uint64_t(i + 1));
    std::swap(order[size_t(i)], order[size_t(j)]);
  }
  return order;
}

Batch DataLoader::batch(const std::vector<int64_t>& order,
                        int64_t index) const {
  const int64_t n = int64_t(order.size());
  const int64_t start = index * options_.batch_size;
  if (index < 0 || index >= num_batches() || start >= n) {
    throw ValueError(
        fmt::format("DataLoader: batch {} of {}", index, num_batches()));
  }
  const int64_t total = std::min(options_.batch_size, n - start);
  const Shard mine = shard_of(total, options_.rank, options_.world_size);
  const int64_t count = mine.count;
  const int64_t per = dataset_->image_numel();
  std::vector<float> pixels(static_cast<size_t>(count * per));
  std::vector<int64_t> labels(static_cast<size_t>(count));
  for (int64_t b = 0; b < count; ++b) {
    const int64_t e = order[size_t(start + mine.begin + b)];
    const uint8_t* src = dataset_->image(e);
    float* dst = pixels.data() + b * per;
    for (int64_t k = 0; k < per; ++k) dst[k] = lut_[src[k]];
    labels[size_t(b)] = dataset_->label(e);
  }
  Shape shape{count};
  shape.insert(shape.end(), dataset_->image_shape().begin(),
               dataset_->image_shape().end());
  return {from_vector(pixels, shape, *backend_), from_vector(labels, *backend_),
          total};
}

DataLoader::Epoch DataLoader::epoch(int64_t epoch, int64_t first_batch) const {
  if (first_batch < 0 || first_batch > num_batches()) {
    throw ValueError(fmt::format("DataLoader: first batch {} of {}",
                                 first_batch, num_batches()));
  }
  return Epoch(this, order(epoch), first_batch);
}

}  // namespace nascent::data
