#include "nascent/io/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include <fmt/format.h>

// emscripten has no real mmap (it would copy anyway); read the file there.
#if !defined(__EMSCRIPTEN__) && __has_include(<sys/mman.h>)
#include <sys/mman.h>
#define NASCENT_HAVE_MMAP 1
#else
#define NASCENT_HAVE_MMAP 0
#endif

namespace nascent::io {
namespace {

constexpr std::align_val_t kAlign{64};

std::string system_error(const std::string& what, const std::string& path) {
  return fmt::format("{}: {}: {}", path, what, std::strerror(errno));
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw IoError(system_error("cannot open", path));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    throw IoError(system_error("cannot stat", path));
  }
  if (!S_ISREG(st.st_mode)) {
    throw IoError(fmt::format("{}: not a regular file", path));
  }
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = size_t(st.st_size);
  if (file->size_ == 0) return file;
#if NASCENT_HAVE_MMAP
  void* p = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (p != MAP_FAILED) {
    file->data_ = static_cast<const std::byte*>(p);
    file->mapped_ = true;
    return file;
  }
#endif
  // Read fallback, into memory aligned like a mapping's tensors would be.
  file->aligned_ = static_cast<std::byte*>(::operator new(file->size_, kAlign));
  file->data_ = file->aligned_;
  size_t done = 0;
  while (done < file->size_) {
    ssize_t n = ::read(fd.get(), file->aligned_ + done, file->size_ - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw IoError(system_error("cannot read", path));
    if (n == 0) {
      throw IoError(
          fmt::format("{}: file shrank while being read ({} of {} "
                      "bytes)",
                      path, done, file->size_));
    }
    done += size_t(n);
  }
  return file;
}

std::shared_ptr<const MappedFile> MappedFile::from_bytes(
    std::vector<std::byte> bytes, std::string name) {
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = std::move(name);
  file->owned_ = std::move(bytes);
  file->data_ = file->owned_.data();
  file->size_ = file->owned_.size();
  return file;
}

MappedFile::~MappedFile() {
#if NASCENT_HAVE_MMAP
  if (mapped_) {
    ::munmap(const_cast<std::byte*>(data_), size_);
  }
#endif
  if (aligned_) ::operator delete(aligned_, kAlign);
}

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  std::string pattern = path_ + ".tmp.XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  fd_ = ::mkstemp(name.data());
  if (fd_ < 0)
    throw IoError(system_error("cannot create a file next to", path_));
  temp_path_ = name.data();
  // mkstemp makes the file private (0600); a model file is as public as
  // any other the user writes.
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd_, 0666 & ~mask);
  buffer_.reserve(size_t(1) << 20);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::write(std::span<const std::byte> bytes) {
  written_ += bytes.size();
  if (buffer_.size() + bytes.size() > buffer_.capacity()) flush();
  if (bytes.size() >= buffer_.capacity()) {
    // Large tensors go straight to the file.
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw IoError(system_error("cannot write", temp_path_));
      done += size_t(n);
    }
    return;
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

void AtomicFileWriter::write_zeros(size_t n) {
  static const std::byte zeros[64] = {};
  while (n > 0) {
    size_t k = n < sizeof(zeros) ? n : sizeof(zeros);
    write({zeros, k});
    n -= k;
  }
}

void AtomicFileWriter::flush() {
  size_t done = 0;
  while (done < buffer_.size()) {
    ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw IoError(system_error("cannot write", temp_path_));
    done += size_t(n);
  }
  buffer_.clear();
}

void AtomicFileWriter::commit() {
  if (committed_) return;
  flush();
  if (::fsync(fd_) != 0) throw IoError(system_error("cannot sync", temp_path_));
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw IoError(system_error("cannot close", temp_path_));
  }
  fd_ = -1;
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    throw IoError(system_error("cannot rename " + temp_path_ + " to", path_));
  }
  committed_ = true;
  // Sync the folder so the rename itself survives a crash.
  std::string dir = ".";
  size_t slash = path_.rfind('/');
  if (slash != std::string::npos)
    dir = slash == 0 ? "/" : path_.substr(0, slash);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

InputFile::InputFile(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "rb");
  if (!file_) throw IoError(system_error("cannot open", path));
  struct stat st;
  if (::fstat(::fileno(file_), &st) != 0 || !S_ISREG(st.st_mode)) {
    std::fclose(file_);
    file_ = nullptr;
    throw IoError(fmt::format("{}: not a regular file", path));
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
    throw IoError(system_error(fmt::format("read error in {}", what), path_));
  }
}

std::vector<std::byte> InputFile::read_all() {
  std::vector<std::byte> bytes(static_cast<size_t>(size_));
  read_at(0, bytes.data(), bytes.size(), "the contents");
  return bytes;
}

}  // namespace nascent::io
