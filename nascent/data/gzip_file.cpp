#include "nascent/data/gzip_file.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "nascent/core/error.h"

// CMake defines NASCENT_HAVE_ZLIB=1 where it found zlib.
#ifndef NASCENT_HAVE_ZLIB
#define NASCENT_HAVE_ZLIB 0
#endif
#if NASCENT_HAVE_ZLIB
#include <zlib.h>
#endif

namespace nascent::data {

namespace {

// The first two bytes of every gzip member (RFC 1952).
bool starts_with_gzip_magic(std::FILE* f) {
  unsigned char magic[2] = {0, 0};
  size_t got = std::fread(magic, 1, 2, f);
  std::rewind(f);
  return got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

}  // namespace

bool has_zlib() {
  return NASCENT_HAVE_ZLIB != 0;
}

GzipInput::GzipInput(const std::string& path) : path_(path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    throw Error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  compressed_ = starts_with_gzip_magic(f);
  if (!compressed_) {
    handle_ = f;
    return;
  }
  std::fclose(f);
#if NASCENT_HAVE_ZLIB
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz) {
    throw Error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  gzbuffer(gz, 1 << 17);
  handle_ = gz;
#else
  throw Error(
      fmt::format("{}: gzip-compressed, and this build of nascent has no zlib "
                  "(WebAssembly): decompress it first (gunzip -k)",
                  path));
#endif
}

GzipInput::~GzipInput() {
  if (!handle_) return;
  if (!compressed_) {
    std::fclose(static_cast<std::FILE*>(handle_));
    return;
  }
#if NASCENT_HAVE_ZLIB
  gzclose_r(static_cast<gzFile>(handle_));
#endif
}

size_t GzipInput::read(void* out, size_t n) {
  if (!compressed_) {
    auto* f = static_cast<std::FILE*>(handle_);
    size_t got = std::fread(out, 1, n, f);
    if (got < n && std::ferror(f)) {
      throw Error(
          fmt::format("{}: read error: {}", path_, std::strerror(errno)));
    }
    return got;
  }
#if NASCENT_HAVE_ZLIB
  auto gz = static_cast<gzFile>(handle_);
  auto* p = static_cast<unsigned char*>(out);
  size_t total = 0;
  while (total < n) {
    // gzread counts in unsigned int.
    unsigned chunk = unsigned(std::min<size_t>(n - total, 1u << 30));
    int got = gzread(gz, p + total, chunk);
    if (got < 0) {
      int code = Z_OK;
      const char* message = gzerror(gz, &code);
      throw FormatError(fmt::format("{}: corrupt gzip data: {}", path_,
                                    message ? message : "unknown error"));
    }
    total += size_t(got);
    if (unsigned(got) < chunk) {
      // gzread stops early at the end of the data or on an error it reports
      // through gzerror (a truncated stream, a bad CRC).
      int code = Z_OK;
      const char* message = gzerror(gz, &code);
      if (code != Z_OK && code != Z_STREAM_END) {
        throw FormatError(fmt::format("{}: corrupt or truncated gzip data: {}",
                                      path_,
                                      message ? message : "unknown error"));
      }
      break;
    }
  }
  return total;
#else
  return 0;
#endif
}

}  // namespace nascent::data
