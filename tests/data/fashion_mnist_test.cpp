// Fashion-MNIST from Debian's dataset-fashion-mnist (or the folder in
// NASCENT_FASHION_MNIST_DIR): sizes, label counts, pixel statistics.
// Skipped, saying why, where the files (or zlib, in WebAssembly) are absent.
#include <gtest/gtest.h>

#include "nascent/data/dataset.h"
#include "nascent/data/gzip_file.h"
#include "nascent/data/loader.h"
#include "nascent/nascent.h"

namespace nascent::data {
namespace {

class FashionMnist : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = default_fashion_mnist_dir();
    if (!fashion_mnist_available(dir_)) {
      GTEST_SKIP() << "Fashion-MNIST not found in " << dir_
                   << " (apt install dataset-fashion-mnist, or set "
                      "NASCENT_FASHION_MNIST_DIR)";
    }
    if (!has_zlib()) {
      GTEST_SKIP() << "this build has no zlib (WebAssembly) to read " << dir_;
    }
  }
  std::string dir_;
};

TEST_F(FashionMnist, SplitsHaveTheirSizesAndBalancedLabels) {
  for (Split split : {Split::train, Split::test}) {
    ImageDataset ds = load_fashion_mnist(dir_, split);
    const int64_t n = split == Split::train ? 60000 : 10000;
    ASSERT_EQ(ds.size(), n);
    EXPECT_EQ(ds.image_shape(), (Shape{1, 28, 28}));
    EXPECT_EQ(ds.num_classes(), 10);
    std::vector<int64_t> counts(10, 0);
    for (int64_t i = 0; i < n; ++i) ++counts[size_t(ds.label(i))];
    for (int64_t c : counts) EXPECT_EQ(c, n / 10);
    // The first image of both splits is an ankle boot (label 9).
    EXPECT_EQ(ds.label(0), 9);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < 784; ++k) sum += ds.image(i)[k];
    }
    double mean = sum / double(n * 784) / 255.0;
    EXPECT_NEAR(mean, kFashionMnistMean, split == Split::train ? 1e-3 : 5e-3);
  }
  EXPECT_STREQ(fashion_mnist_classes()[9], "Ankle boot");
}

TEST_F(FashionMnist, NormalisedTrainingBatchesHaveZeroMeanUnitStd) {
  ImageDataset ds = load_fashion_mnist(dir_, Split::train);
  DataLoader loader(ds,
                    {.batch_size = 6000,
                     .seed = 1,
                     .mean = kFashionMnistMean,
                     .std = kFashionMnistStd},
                    default_backend());
  Batch b = loader.batch(loader.order(0), 0);
  EXPECT_NEAR(mean(b.images).item<float>(), 0.0, 0.02);
  EXPECT_NEAR(std(b.images).item<float>(), 1.0, 0.02);
}

}  // namespace
}  // namespace nascent::data
