// Files for the readers and writers in io/: a read-only view of a whole file
// (memory-mapped where the platform can, read into memory where it cannot)
// and a writer that replaces its target atomically.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nascent/core/error.h"

namespace nascent {

// A file that cannot be opened, read, written or renamed; the message names
// the file and the system's reason.
class IoError : public Error {
 public:
  using Error::Error;
};

namespace io {

// The bytes of a whole file, read-only. Mapped with mmap on POSIX systems, so
// opening a 10 GB model costs no reads; under emscripten, or when mmap fails
// (a file system without it), the file is read into aligned memory instead.
// Shared by everything that points into it (tensors of a model), so the
// mapping lives as long as its last user.
class MappedFile {
 public:
  static std::shared_ptr<const MappedFile> open(const std::string& path);
  // A buffer posing as a file (tests, data already in memory). `name`
  // stands in for the path in error messages.
  static std::shared_ptr<const MappedFile> from_bytes(
      std::vector<std::byte> bytes, std::string name);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  bool is_mapped() const { return mapped_; }

 private:
  MappedFile() = default;

  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::vector<std::byte> owned_;
  std::byte* aligned_ = nullptr;  // Read fallback: 64-byte aligned buffer.
};

// A file read in pieces (safetensors): size() is known up front so that
// readers can check every length a header claims against it before
// allocating.
class InputFile {
 public:
  explicit InputFile(const std::string& path);  // IoError if missing.
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  // Reads n bytes at `offset`; FormatError naming the file and `what` if the
  // file ends before.
  void read_at(uint64_t offset, void* out, size_t n, const char* what);
  std::vector<std::byte> read_all();

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  uint64_t size_ = 0;
};

// Writes `path` so that readers see either the old file or the complete new
// one: the bytes go to a temporary file in the same folder, which is synced
// and renamed over `path` by commit(). Destroying the writer without a
// commit removes the temporary file.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::span<const std::byte> bytes);
  void write_zeros(size_t n);
  uint64_t bytes_written() const { return written_; }
  void commit();

 private:
  void flush();

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  std::vector<std::byte> buffer_;
  uint64_t written_ = 0;
  bool committed_ = false;
};

}  // namespace io
}  // namespace nascent
