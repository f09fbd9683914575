// Writes GGUF version 3 files: metadata, then tensor infos, then each
// tensor's bytes at a multiple of the alignment (general.alignment when the
// metadata sets it, 32 otherwise). The file appears atomically: it is written
// to a temporary file, synced and renamed (io::AtomicFileWriter).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "nascent/io/gguf.h"

namespace nascent::gguf {

// ggml's GGML_MAX_NAME is 64 bytes with the terminating zero: llama.cpp
// rejects longer tensor names, so the writer does too.
inline constexpr size_t kMaxTensorName = 63;

class Writer {
 public:
  // Fills `out` (exactly the tensor's size) with its bytes; called once,
  // while the file is written, so large models never sit in memory twice.
  using Producer = std::function<void(std::span<std::byte> out)>;

  Metadata& metadata() { return metadata_; }
  const Metadata& metadata() const { return metadata_; }

  // Adds a tensor whose bytes the writer owns. `shape` is row-major (see
  // TensorInfo). ValueError for a duplicate or over-long name, a bad shape
  // or a byte count that does not match the type and shape.
  void add_tensor(std::string name, std::vector<int64_t> shape, TensorType type,
                  std::vector<std::byte> bytes);
  // Adds a tensor whose bytes `produce` writes at write() time.
  void add_tensor(std::string name, std::vector<int64_t> shape, TensorType type,
                  Producer produce);

  // The infos as they will be written (offsets included).
  std::vector<TensorInfo> tensor_infos() const;
  uint32_t alignment() const;

  // Writes the file; IoError if it cannot, ValueError for bad metadata
  // (a general.alignment that is not a u32 power of two).
  void write(const std::string& path) const;

 private:
  struct Entry {
    TensorInfo info;
    Producer produce;
  };
  void add(std::string name, std::vector<int64_t> shape, TensorType type,
           Producer produce, const uint64_t* expected_size);

  Metadata metadata_;
  std::vector<Entry> tensors_;
};

}  // namespace nascent::gguf
