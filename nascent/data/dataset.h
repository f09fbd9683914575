// Image classification data held in memory: u8 pixels and integer labels,
// and Fashion-MNIST read from its IDX files (Debian's dataset-fashion-mnist
// puts them in /usr/share/datasets/fashion-mnist).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "nascent/core/shape.h"

namespace nascent::data {

class ImageDataset {
 public:
  // pixels: size x image_shape, row-major; labels in [0, num_classes).
  // ValueError if the sizes disagree or a label is out of range.
  ImageDataset(std::vector<uint8_t> pixels, Shape image_shape,
               std::vector<int64_t> labels, int64_t num_classes);

  int64_t size() const { return int64_t(labels_.size()); }
  const Shape& image_shape() const { return image_shape_; }  // [C, H, W]
  int64_t image_numel() const { return image_numel_; }
  int64_t num_classes() const { return num_classes_; }
  const uint8_t* image(int64_t i) const {
    return pixels_.data() + i * image_numel_;
  }
  int64_t label(int64_t i) const { return labels_[size_t(i)]; }

 private:
  std::vector<uint8_t> pixels_;
  Shape image_shape_;
  int64_t image_numel_ = 0;
  std::vector<int64_t> labels_;
  int64_t num_classes_ = 0;
};

enum class Split { train, test };

// $NASCENT_FASHION_MNIST_DIR if set, else /usr/share/datasets/fashion-mnist.
std::string default_fashion_mnist_dir();
// Whether `dir` holds the four files (gzipped or not).
bool fashion_mnist_available(const std::string& dir);

// Reads train-* or t10k-{images-idx3,labels-idx1}-ubyte[.gz] from `dir`:
// images u8 [N, 28, 28] become [N, 1, 28, 28]; FormatError naming the file
// if the shapes, types or labels are not Fashion-MNIST's.
ImageDataset load_fashion_mnist(const std::string& dir, Split split);

const std::array<const char*, 10>& fashion_mnist_classes();
// Mean and standard deviation of the training pixels scaled to [0, 1].
inline constexpr float kFashionMnistMean = 0.2860f;
inline constexpr float kFashionMnistStd = 0.3530f;

}  // namespace nascent::data
