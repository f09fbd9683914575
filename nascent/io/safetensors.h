// safetensors (Hugging Face's tensor file format), read and written by our
// own code: an 8-byte little-endian header length, a JSON header mapping
// names to {dtype, shape, data_offsets} (plus an optional "__metadata__"
// object of strings), then the tensors' bytes, row-major little-endian.
//
// The reader checks everything a header claims against the file before it
// allocates or reads: a truncated or corrupt file raises FormatError naming
// the file and what is wrong, never crashes or allocates more than the
// file's size. dtypes: F32, F64, F16, BF16, I32, I64, U8, BOOL.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nascent/core/tensor.h"

namespace nascent::io {

class InputFile;

using Metadata = std::map<std::string, std::string>;

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  uint64_t begin = 0;  // Byte range in the data section.
  uint64_t end = 0;
};

// The safetensors name of a dtype ("F32") and back; FormatError naming
// `context` for a name nascent has no dtype for.
const char* safetensors_dtype_name(DType dtype);
DType safetensors_dtype(const std::string& name, const std::string& context);

class SafetensorsReader {
 public:
  // Opens `path` and validates its header and layout.
  explicit SafetensorsReader(const std::string& path);
  ~SafetensorsReader();
  SafetensorsReader(SafetensorsReader&&) noexcept;
  SafetensorsReader& operator=(SafetensorsReader&&) noexcept;

  const std::string& path() const { return path_; }
  // Entries in the order of their data.
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const SafetensorsEntry* find(const std::string& name) const;
  const Metadata& metadata() const { return metadata_; }

  // Reads one tensor into `backend`; ValueError if there is no such name.
  Tensor load(const std::string& name, Backend& backend) const;
  std::map<std::string, Tensor> load_all(Backend& backend) const;

 private:
  Tensor load(const SafetensorsEntry& entry, Backend& backend) const;

  std::string path_;
  std::unique_ptr<InputFile> file_;
  uint64_t data_start_ = 0;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, size_t> by_name_;
  Metadata metadata_;
};

std::map<std::string, Tensor> load_safetensors(const std::string& path,
                                               Backend& backend,
                                               Metadata* metadata = nullptr);

// Writes the tensors (any backend, layout and supported dtype) atomically
// (see file.h), in name order.
void save_safetensors(const std::string& path,
                      const std::map<std::string, Tensor>& tensors,
                      const Metadata& metadata = {});

}  // namespace nascent::io
