// Loading cuBLASLt (and the search shared with cuDNN's loader in
// conv_dnn.cpp) with dlopen on first use.
#include "nascent/backends/cuda/libraries.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "nascent/core/error.h"

// CMake passes the folders as one ':'-separated string.
#ifndef NASCENT_CUDA_LIBRARY_DIRS
#define NASCENT_CUDA_LIBRARY_DIRS ""
#endif

namespace nascent::cuda {

namespace {

std::string last_dlerror() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown error";
}

void split_into(const std::string& list, char sep,
                std::vector<std::string>& out) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(sep, start);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(start, end - start);
    if (!item.empty()) {
      bool seen = false;
      for (const std::string& d : out) seen = seen || d == item;
      if (!seen) out.push_back(item);
    }
    start = end + 1;
  }
}

}  // namespace

SharedLibrary::SharedLibrary(const std::string& soname,
                             const std::vector<std::string>& dirs,
                             const std::string& what)
    : soname_(soname) {
  std::vector<std::string> candidates = {soname};
  for (const std::string& d : dirs) candidates.push_back(d + "/" + soname);
  std::string tried;
  for (const std::string& c : candidates) {
    // RTLD_LOCAL: its symbols stay out of the global namespace (a program
    // may link another copy of the library).
    handle_ = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ != nullptr) {
      path_ = c;
      return;
    }
    tried += fmt::format("\n  {}: {}", c, last_dlerror());
  }
  throw BackendError(
      fmt::format("cuda: cannot load {} ({}); install it or put its folder on "
                  "LD_LIBRARY_PATH. Tried:{}",
                  soname, what, tried));
}

SharedLibrary::~SharedLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

void* SharedLibrary::symbol(const char* name) const {
  dlerror();  // Clears a stale error.
  void* p = dlsym(handle_, name);
  if (p == nullptr) {
    throw BackendError(fmt::format("cuda: {} ({}) has no function {}: {}",
                                   soname_, path_, name, last_dlerror()));
  }
  return p;
}

std::vector<std::string> library_dirs() {
  std::vector<std::string> dirs;
  split_into(NASCENT_CUDA_LIBRARY_DIRS, ':', dirs);
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    const char* home = std::getenv(var);
    if (home != nullptr && *home != '\0') {
      split_into(std::string(home) + "/lib64", ':', dirs);
      split_into(std::string(home) + "/lib", ':', dirs);
    }
  }
  return dirs;
}

namespace {

struct LoadedCublasLt {
  CublasLt table;
  std::string error;  // Non-empty when loading failed.
  std::string path;
};

LoadedCublasLt load_cublaslt() {
  LoadedCublasLt out;
  try {
    // Never freed: see SharedLibrary.
    auto* lib = new SharedLibrary(
        fmt::format("libcublasLt.so.{}", CUBLAS_VER_MAJOR), library_dirs(),
        "cuBLASLt, which the CUDA backend's matmul and conv2d call");
    out.path = lib->path();
#define NASCENT_RESOLVE(f)                              \
  {                                                     \
    void* p = lib->symbol(#f);                          \
    std::memcpy(&out.table.f, &p, sizeof(out.table.f)); \
  }
    NASCENT_CUBLASLT_ENTRY_POINTS(NASCENT_RESOLVE)
#undef NASCENT_RESOLVE
  } catch (const BackendError& e) {
    out.table = CublasLt{};
    out.error = e.what();
  }
  return out;
}

const LoadedCublasLt& loaded_cublaslt() {
  static const LoadedCublasLt loaded = load_cublaslt();
  return loaded;
}

}  // namespace

const CublasLt& cublaslt() {
  const LoadedCublasLt& l = loaded_cublaslt();
  if (!l.error.empty()) throw BackendError(l.error);
  return l.table;
}

std::vector<LibraryInfo> load_libraries() {
  const CublasLt& lt = cublaslt();
  LibraryInfo info;
  info.soname = fmt::format("libcublasLt.so.{}", CUBLAS_VER_MAJOR);
  info.path = loaded_cublaslt().path;
#define NASCENT_NAME(f) \
  if (lt.f != nullptr) info.functions.push_back(#f);
  NASCENT_CUBLASLT_ENTRY_POINTS(NASCENT_NAME)
#undef NASCENT_NAME
  info.version = lt.cublasLtGetVersion();
  info.header_version = CUBLAS_VERSION;
  std::vector<LibraryInfo> all = {info};
  for (LibraryInfo& dnn : load_cudnn_library()) all.push_back(dnn);
  return all;
}

}  // namespace nascent::cuda
