// Sequential reads of a file that may be gzip-compressed (zlib): gzipped
// files are inflated and their CRC and length checked, other files are read
// as they are. A build without zlib (WebAssembly) reads plain files and
// refuses gzipped ones with a clear error.
#pragma once

#include <cstddef>
#include <string>

namespace nascent::data {

// Whether this build can inflate gzip files.
bool has_zlib();

class GzipInput {
 public:
  explicit GzipInput(const std::string& path);  // nascent::Error if missing.
  ~GzipInput();
  GzipInput(const GzipInput&) = delete;
  GzipInput& operator=(const GzipInput&) = delete;

  const std::string& path() const { return path_; }
  bool compressed() const { return compressed_; }
  // Reads up to n bytes; fewer only at the end of the data. FormatError
  // naming the file for corrupt or truncated compressed data.
  size_t read(void* out, size_t n);

 private:
  std::string path_;
  bool compressed_ = false;
  void* handle_ = nullptr;  // gzFile, or FILE* for a plain file.
};

}  // namespace nascent::data
