// DataLoader on a synthetic dataset: normalisation, batch sizes, seeded
// shuffles that depend only on (seed, epoch), resuming mid-epoch.
#include "nascent/data/loader.h"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "io/test_files.h"
#include "nascent/nascent.h"

namespace nascent::data {
namespace {

using nascent::testing::expect_error;

// 10 images of 1x2x3 whose pixels encode their index: image i holds
// 10 * i + k at pixel k; label i % 4.
ImageDataset synthetic(int64_t n = 10) {
  std::vector<uint8_t> pixels;
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < 6; ++k) pixels.push_back(uint8_t(10 * i + k));
    labels.push_back(i % 4);
  }
  return ImageDataset(pixels, {1, 2, 3}, labels, 4);
}

TEST(Loader, BatchesHoldNormalisedPixelsAndLabels) {
  ImageDataset ds = synthetic();
  DataLoader loader(
      ds, {.batch_size = 4, .shuffle = false, .mean = 0.5f, .std = 0.25f},
      default_backend());
  EXPECT_EQ(loader.num_batches(), 3);
  std::vector<int64_t> sizes;
  int64_t seen = 0;
  for (const Batch& b : loader.epoch(0)) {
    int64_t n = b.images.shape(0);
    sizes.push_back(n);
    EXPECT_EQ(b.images.shape(), (Shape{n, 1, 2, 3}));
    EXPECT_EQ(b.images.dtype(), DType::f32);
    EXPECT_EQ(b.labels.dtype(), DType::i64);
    std::vector<float> px = b.images.to_vector<float>();
    std::vector<int64_t> lb = b.labels.to_vector<int64_t>();
    for (int64_t j = 0; j < n; ++j) {
      int64_t i = seen + j;
      EXPECT_EQ(lb[size_t(j)], i % 4);
      for (int64_t k = 0; k < 6; ++k) {
        float want = (float(10 * i + k) / 255.0f - 0.5f) / 0.25f;
        EXPECT_FLOAT_EQ(px[size_t(j * 6 + k)], want);
      }
    }
    seen += n;
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
  DataLoader dropping(ds, {.batch_size = 4, .drop_last = true},
                      default_backend());
  EXPECT_EQ(dropping.num_batches(), 2);
}

TEST(Loader, ShuffleDependsOnlyOnSeedAndEpoch) {
  ImageDataset ds = synthetic(1000);
  DataLoader a(ds, {.batch_size = 64, .seed = 3}, default_backend());
  DataLoader b(ds, {.batch_size = 64, .seed = 3}, default_backend());
  DataLoader c(ds, {.batch_size = 64, .seed = 4}, default_backend());
  std::vector<int64_t> e0 = a.order(0), e1 = a.order(1);
  std::vector<int64_t> sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[size_t(i)], i);
  EXPECT_EQ(e0, b.order(0));
  EXPECT_NE(e0, e1);
  EXPECT_NE(e0, c.order(0));
  // Not the identity, and roughly uniform: element 0 lands anywhere.
  int fixed = 0;
  for (int64_t i = 0; i < 1000; ++i) fixed += e0[size_t(i)] == i;
  EXPECT_LT(fixed, 10);
  std::set<int64_t> firsts;
  for (int64_t e = 0; e < 50; ++e) firsts.insert(a.order(e)[0]);
  EXPECT_GT(firsts.size(), 40u);
}

TEST(Loader, ResumingMidEpochGivesTheSameBatches) {
  ImageDataset ds = synthetic(100);
  DataLoader loader(ds, {.batch_size = 16, .seed = 9}, default_backend());
  std::vector<std::vector<int64_t>> full, resumed;
  for (const Batch& b : loader.epoch(2)) {
    full.push_back(b.labels.to_vector<int64_t>());
  }
  auto epoch = loader.epoch(2, 4);
  auto it = epoch.begin();
  EXPECT_EQ(it.index(), 4);
  for (; it != epoch.end(); ++it) {
    resumed.push_back((*it).labels.to_vector<int64_t>());
  }
  ASSERT_EQ(resumed.size(), 3u);
  EXPECT_EQ(resumed[0], full[4]);
  EXPECT_EQ(resumed[2], full[6]);
}

TEST(Loader, Errors) {
  ImageDataset ds = synthetic();
  expect_error<ValueError>(
      [&] { DataLoader(ds, {.batch_size = 0}, default_backend()); },
      {"DataLoader", "batch size 0"});
  expect_error<ValueError>(
      [&] { DataLoader(ds, {.std = 0.0f}, default_backend()); },
      {"DataLoader", "std 0"});
  DataLoader loader(ds, {.batch_size = 4}, default_backend());
  expect_error<ValueError>([&] { loader.epoch(0, 4); },
                           {"DataLoader", "first batch 4 of 3"});
  expect_error<ValueError>([&] { loader.batch(loader.order(0), 3); },
                           {"batch 3 of 3"});
  expect_error<ValueError>(
      [&] {
        ImageDataset({1, 2, 3}, {2, 2}, {0}, 2);
      },
      {"ImageDataset", "3 pixels do not make 1 images of shape [2, 2]"});
  expect_error<ValueError>(
      [&] {
        ImageDataset({1, 2, 3, 4}, {2, 2}, {5}, 2);
      },
      {"ImageDataset", "label 5 of example 0 is outside [0, 2)"});
}

}  // namespace
}  // namespace nascent::data
