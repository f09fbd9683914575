// Shared by the fuzz targets (fuzz/targets/*.cpp). Each target defines
// libFuzzer's LLVMFuzzerTestOneInput; the same file links either with
// libFuzzer (NASCENT_FUZZ builds, clang) or with replay_main.cpp, which runs
// saved inputs through it in the normal test suite.
//
// A target returns normally when the reader accepts an input or rejects it
// with a nascent::Error; anything else (another exception, a crash, a
// sanitizer report, an allocation over libFuzzer's limit) is a finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "nascent/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace nascent::fuzz {

// Readers that take a path get the input through this file: one per process
// (libFuzzer's -fork/-jobs workers run side by side), in /dev/shm where
// there is one, removed at exit.
class ScratchFile {
 public:
  explicit ScratchFile(const char* suffix) {
    const char* dir = std::getenv("TMPDIR");
    std::string base = dir && *dir ? dir : "/tmp";
    if (!(dir && *dir) && ::access("/dev/shm", W_OK) == 0) base = "/dev/shm";
    path_ = base + "/nascent_fuzz_" + std::to_string(::getpid()) + suffix;
  }
  ~ScratchFile() { std::remove(path_.c_str()); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  // Replaces the file's contents; aborts if it cannot (not a finding of
  // the reader, but the run would mean nothing).
  const std::string& write(const uint8_t* data, size_t size) {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (!f || (size && std::fwrite(data, 1, size, f) != size) ||
        std::fclose(f) != 0) {
      std::perror(path_.c_str());
      std::abort();
    }
    return path_;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::vector<std::byte> to_bytes(const uint8_t* data, size_t size) {
  auto s = std::as_bytes(std::span(data, size));
  return {s.begin(), s.end()};
}

// A finding that is no crash (an invariant of the output broken): printed
// and aborted, so libFuzzer saves the input.
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  std::abort();
}

}  // namespace nascent::fuzz
