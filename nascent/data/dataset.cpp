#include "nascent/data/dataset.h"

#include <cstdlib>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "nascent/core/error.h"
#include "nascent/data/idx.h"

namespace nascent::data {

ImageDataset::ImageDataset(std::vector<uint8_t> pixels, Shape image_shape,
                           std::vector<int64_t> labels, int64_t num_classes)
    : pixels_(std::move(pixels)),
      image_shape_(std::move(image_shape)),
      image_numel_(checked_numel(image_shape_, "ImageDataset")),
      labels_(std::move(labels)),
      num_classes_(num_classes) {
  if (num_classes_ <= 0) {
    throw ValueError(fmt::format("ImageDataset: {} classes", num_classes_));
  }
  if (uint64_t(pixels_.size()) != uint64_t(image_numel_) * labels_.size()) {
    throw ValueError(
        fmt::format("ImageDataset: {} pixels do not make {} images of shape {}",
                    pixels_.size(), labels_.size(), to_string(image_shape_)));
  }
  for (size_t i = 0; i < labels_.size(); ++i) {
    if (labels_[i] < 0 || labels_[i] >= num_classes_) {
      throw ValueError(
          fmt::format("ImageDataset: label {} of example {} is outside [0, {})",
                      labels_[i], i, num_classes_));
    }
  }
}

std::string default_fashion_mnist_dir() {
  const char* env = std::getenv("NASCENT_FASHION_MNIST_DIR");
  if (env && *env) return env;
  return "/usr/share/datasets/fashion-mnist";
}

namespace {

// The file for `stem` in `dir`: the gzipped one if present, else the plain.
std::string find_file(const std::string& dir, const std::string& stem) {
  for (const char* suffix : {".gz", ""}) {
    std::string path = dir + "/" + stem + suffix;
    if (std::ifstream(path).good()) return path;
  }
  return "";
}

std::string images_stem(Split split) {
  return split == Split::train ? "train-images-idx3-ubyte"
                               : "t10k-images-idx3-ubyte";
}
std::string labels_stem(Split split) {
  return split == Split::train ? "train-labels-idx1-ubyte"
                               : "t10k-labels-idx1-ubyte";
}

}  // namespace

bool fashion_mnist_available(const std::string& dir) {
  for (Split s : {Split::train, Split::test}) {
    if (find_file(dir, images_stem(s)).empty() ||
        find_file(dir, labels_stem(s)).empty()) {
      return false;
    }
  }
  return true;
}

ImageDataset load_fashion_mnist(const std::string& dir, Split split) {
  std::string images_path = find_file(dir, images_stem(split));
  std::string labels_path = find_file(dir, labels_stem(split));
  if (images_path.empty() || labels_path.empty()) {
    throw Error(fmt::format(
        "Fashion-MNIST: {}[.gz] or {}[.gz] not found in {} (Debian: apt "
        "install dataset-fashion-mnist)",
        images_stem(split), labels_stem(split), dir));
  }
  // 60000 images of 28 x 28 bytes at most; the limit stops a corrupt header
  // early.
  constexpr uint64_t kMaxBytes = uint64_t(1) << 28;
  IdxArray images = read_idx(images_path, kMaxBytes);
  IdxArray labels = read_idx(labels_path, kMaxBytes);
  if (images.dtype != DType::u8 || images.shape.size() != 3 ||
      images.shape[1] != 28 || images.shape[2] != 28) {
    throw FormatError(
        fmt::format("{}: expected u8 images [N, 28, 28], found {}{}",
                    images_path, name(images.dtype), to_string(images.shape)));
  }
  if (labels.dtype != DType::u8 || labels.shape.size() != 1 ||
      labels.shape[0] != images.shape[0]) {
    throw FormatError(fmt::format(
        "{}: expected u8 labels [{}] to match the images, found {}{}",
        labels_path, images.shape[0], name(labels.dtype),
        to_string(labels.shape)));
  }
  std::vector<int64_t> label_values(labels.data.size());
  for (size_t i = 0; i < labels.data.size(); ++i) {
    label_values[i] = int64_t(uint8_t(labels.data[i]));
    if (label_values[i] >= 10) {
      throw FormatError(
          fmt::format("{}: label {} of example {} is not in "
                      "[0, 10)",
                      labels_path, label_values[i], i));
    }
  }
  std::vector<uint8_t> pixels(images.data.size());
  if (!pixels.empty()) {
    std::memcpy(pixels.data(), images.data.data(), pixels.size());
  }
  return ImageDataset(std::move(pixels), {1, 28, 28}, std::move(label_values),
                      10);
}

const std::array<const char*, 10>& fashion_mnist_classes() {
  static const std::array<const char*, 10> names = {
      "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
      "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

}  // namespace nascent::data
