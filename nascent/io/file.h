// Files from outside and files we write: bounded reads that name the file in
// every error, and atomic writes (temp file, fsync, rename, fsync of the
// folder), so a crash leaves either the old file or the new one, never half.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace nascent::io {

// A file opened for reading; size() is known up front so that readers can
// check every length a header claims against it before allocating.
class InputFile {
 public:
  explicit InputFile(const std::string& path);  // nascent::Error if missing.
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

// Writes `path` atomically: bytes go to a temporary file next to it, and
// commit() flushes them to disk, renames the temporary over `path` and
// flushes the folder. Destroying it uncommitted removes the temporary.
class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n);
  void commit();

 private:
  void fail(const std::string& what);

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
};

// Whole-file helpers built on the two classes above.
void write_file_atomic(const std::string& path, const void* data, size_t n);

}  // namespace nascent::io
