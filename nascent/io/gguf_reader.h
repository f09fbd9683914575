// Reads GGUF files (versions 2 and 3, little-endian): the metadata, the
// tensor infos, and a zero-copy view of each tensor's bytes in the stored
// type (quantized weights stay quantized).
//
// The file is memory-mapped (see io::MappedFile). Every count, length, type,
// offset and size in it is checked before use, so a truncated or corrupted
// file raises nascent::FormatError naming the file, the byte offset and what
// is wrong; nothing is allocated beyond a small multiple of the file's size.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nascent/io/file.h"
#include "nascent/io/gguf.h"

namespace nascent::gguf {

// Arrays nest at most this deep (an array of arrays is depth 2).
inline constexpr int kMaxArrayDepth = 8;
// GGUF keys are at most 65535 bytes (docs/gguf.md).
inline constexpr uint64_t kMaxKeyLength = 65535;

class Reader {
 public:
  // IoError when the file cannot be opened, FormatError when it is not a
  // valid GGUF file.
  explicit Reader(const std::string& path);
  explicit Reader(std::shared_ptr<const io::MappedFile> file);

  const std::string& path() const { return file_->path(); }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  // Where the data section starts in the file.
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const { return file_->size(); }

  const Metadata& metadata() const { return metadata_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  // FormatError naming the file when the tensor is absent.
  const TensorInfo& tensor(std::string_view name) const;

  // The tensor's bytes inside the mapping; valid while the file is (see
  // file(): holding the shared pointer keeps them alive).
  std::span<const std::byte> tensor_data(const TensorInfo& info) const;
  std::span<const std::byte> tensor_data(std::string_view name) const {
    return tensor_data(tensor(name));
  }
  const std::shared_ptr<const io::MappedFile>& file() const { return file_; }

 private:
  void parse();

  std::shared_ptr<const io::MappedFile> file_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  Metadata metadata_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace nascent::gguf
