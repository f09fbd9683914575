// Batches of an ImageDataset as tensors: images f32 [B, C, H, W] scaled to
// (pixel / 255 - mean) / std, labels i64 [B].
//
// The order of an epoch depends only on the seed and the epoch number (a
// Fisher-Yates shuffle driven by Philox, as random.h), so training resumed
// at (epoch, batch) sees exactly the batches an uninterrupted run would.
#pragma once

#include <cstdint>
#include <vector>

#include "nascent/core/tensor.h"
#include "nascent/data/dataset.h"

namespace nascent::data {

struct Batch {
  Tensor images;  // f32 [B, C, H, W]
  Tensor labels;  // i64 [B]
  // Examples in the whole step, over every rank of a data-parallel run
  // (B itself when the loader is not sharded).
  int64_t total = 0;
};

// The examples [begin, begin + count) that `rank` takes of `total`: an even
// split, the first total % world_size ranks taking one more.
struct Shard {
  int64_t begin = 0;
  int64_t count = 0;
};
Shard shard_of(int64_t total, int rank, int world_size);

struct LoaderOptions {
  int64_t batch_size = 64;
  bool shuffle = true;
  bool drop_last = false;  // Drop a last batch smaller than batch_size.
  uint64_t seed = 0;
  float mean = 0.0f;  // Normalisation of pixels scaled to [0, 1].
  float std = 1.0f;
  // Data-parallel runs: each batch of batch_size examples is shared out
  // between world_size ranks (shard_of), and this loader gives rank
  // `rank`'s part; every rank sees the same order, so each example is seen
  // once per epoch.
  int rank = 0;
  int world_size = 1;
};

class DataLoader {
 public:
  // The dataset must outlive the loader.
  DataLoader(const ImageDataset& dataset, LoaderOptions options,
             Backend& backend);

  const LoaderOptions& options() const { return options_; }
  int64_t num_batches() const;
  // The example order of `epoch`: a permutation, or 0..N-1 unshuffled.
  std::vector<int64_t> order(int64_t epoch) const;
  // Batch `index` of an epoch whose order is `order`.
  Batch batch(const std::vector<int64_t>& order, int64_t index) const;

  // The batches of one epoch from `first` on:
  //   for (const Batch& b : loader.epoch(e)) ...
  class Epoch {
   public:
    class Iterator {
     public:
      Batch operator*() const {
        return epoch_->loader_->batch(epoch_->order_, i_);
      }
      Iterator& operator++() {
        ++i_;
        return *this;
      }
      bool operator!=(const Iterator& o) const { return i_ != o.i_; }
      int64_t index() const { return i_; }

     private:
      friend class Epoch;
      Iterator(const Epoch* epoch, int64_t i) : epoch_(epoch), i_(i) {}
      const Epoch* epoch_;
      int64_t i_;
    };
    Iterator begin() const { return Iterator(this, first_); }
    Iterator end() const { return Iterator(this, loader_->num_batches()); }

   private:
    friend class DataLoader;
    Epoch(const DataLoader* loader, std::vector<int64_t> order, int64_t first)
        : loader_(loader), order_(std::move(order)), first_(first) {}
    const DataLoader* loader_;
    std::vector<int64_t> order_;
    int64_t first_;
  };
  Epoch epoch(int64_t epoch, int64_t first_batch = 0) const;

 private:
  const ImageDataset* dataset_;
  LoaderOptions options_;
  Backend* backend_;
  float lut_[256];  // Normalised value of each pixel byte.
};

}  // namespace nascent::data
