#include "nascent/io/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "nascent/core/error.h"

namespace nascent::io {

namespace {

std::string errno_text() {
  return std::strerror(errno);
}

// The folder holding `path`, for the fsync that makes a rename durable.
std::string parent_dir(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

InputFile::InputFile(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "rb");
  if (!file_) {
    throw Error(fmt::format("{}: cannot open: {}", path, errno_text()));
  }
  struct stat st;
  if (::fstat(::fileno(file_), &st) != 0 || !S_ISREG(st.st_mode)) {
    std::fclose(file_);
    file_ = nullptr;
    throw Error(fmt::format("{}: not a regular file", path));
  }
  size_ = uint64_t(st.st_size);
}

InputFile::~InputFile() {
  if (file_) std::fclose(file_);
}

void InputFile::read_at(uint64_t offset, void* out, size_t n,
                        const char* what) {
  if (offset > size_ || n > size_ - offset) {
    throw FormatError(fmt::format(
        "{}: truncated: {} needs bytes [{}, {}) but the file has {}", path_,
        what, offset, offset + n, size_));
  }
  if (n == 0) return;
  if (::fseeko(file_, off_t(offset), SEEK_SET) != 0 ||
      std::fread(out, 1, n, file_) != n) {
    throw Error(
        fmt::format("{}: read error in {}: {}", path_, what, errno_text()));
  }
}

std::vector<std::byte> InputFile::read_all() {
  std::vector<std::byte> bytes(static_cast<size_t>(size_));
  read_at(0, bytes.data(), bytes.size(), "the contents");
  return bytes;
}

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  static std::atomic<uint64_t> counter{0};
  temp_path_ =
      fmt::format("{}.tmp.{}.{}", path, long(::getpid()), counter.fetch_add(1));
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
               0644);
  if (fd_ < 0) {
    throw Error(fmt::format("{}: cannot create {}: {}", path_, temp_path_,
                            errno_text()));
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_path_.c_str());
  }
}

void AtomicFile::fail(const std::string& what) {
  std::string message =
      fmt::format("{}: {} failed: {}", path_, what, errno_text());
  ::close(fd_);
  fd_ = -1;
  ::unlink(temp_path_.c_str());
  throw Error(message);
}

void AtomicFile::write(const void* data, size_t n) {
  if (fd_ < 0) throw Error(fmt::format("{}: write after commit", path_));
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    p += w;
    n -= size_t(w);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw Error(fmt::format("{}: committed twice", path_));
  if (::fsync(fd_) != 0) fail("fsync");
  if (::close(fd_) != 0) {
    fd_ = -1;
    ::unlink(temp_path_.c_str());
    throw Error(fmt::format("{}: close failed: {}", path_, errno_text()));
  }
  fd_ = -1;
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    std::string message = fmt::format("{}: rename from {} failed: {}", path_,
                                      temp_path_, errno_text());
    ::unlink(temp_path_.c_str());
    throw Error(message);
  }
  // The rename is durable once the folder's entry is on disk. Some file
  // systems cannot fsync a folder (EINVAL); the data itself is safe then.
  int dir = ::open(parent_dir(path_).c_str(), O_RDONLY | O_CLOEXEC);
  if (dir >= 0) {
    int rc = ::fsync(dir);
    int err = errno;
    ::close(dir);
    if (rc != 0 && err != EINVAL && err != ENOTSUP && err != EBADF) {
      errno = err;
      throw Error(fmt::format("{}: fsync of its folder failed: {}", path_,
                              errno_text()));
    }
  }
}

void write_file_atomic(const std::string& path, const void* data, size_t n) {
  AtomicFile f(path);
  f.write(data, n);
  f.commit();
}

}  // namespace nascent::io
