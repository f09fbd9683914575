// cuBLASLt and cuDNN are opened with dlopen on first use, not linked:
// linking libcublasLt (540 MB) makes every process map it and run its
// static initialisers at startup, about 140 MiB of resident memory in a
// run that never touches a GPU (bench/NOTES.md, Session 5). The backend
// calls them through tables of entry points resolved by name from the
// versioned sonames of the headers it was compiled against.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <cublasLt.h>

namespace nascent::cuda {

// A shared library opened with dlopen. Tables keep theirs for the life of
// the process (never closed: contexts freed at exit still call into it).
class SharedLibrary {
 public:
  // Tries `soname` through the loader's own search (LD_LIBRARY_PATH,
  // ldconfig), then dir/soname for each of `dirs`. Throws BackendError
  // naming `what`, the soname and each place tried with dlerror()'s text.
  SharedLibrary(const std::string& soname, const std::vector<std::string>& dirs,
                const std::string& what);
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  // The address of function `name`; BackendError naming it and the
  // library when the library lacks it.
  void* symbol(const char* name) const;
  // Where the library was found (the soname or dir/soname that opened).
  const std::string& path() const { return path_; }

 private:
  void* handle_ = nullptr;
  std::string soname_, path_;
};

// Folders tried after the loader's search: the toolkit's and cuDNN's
// library folders at configure time (CMake) and $CUDA_HOME/lib64.
std::vector<std::string> library_dirs();

// The cuBLASLt functions the backend calls, X(name) each.
// clang-format off
#define NASCENT_CUBLASLT_ENTRY_POINTS(X)  \
  X(cublasLtGetVersion)                   \
  X(cublasLtGetStatusString)              \
  X(cublasLtCreate)                       \
  X(cublasLtDestroy)                      \
  X(cublasLtMatrixLayoutCreate)           \
  X(cublasLtMatrixLayoutDestroy)          \
  X(cublasLtMatrixLayoutSetAttribute)     \
  X(cublasLtMatmulDescCreate)             \
  X(cublasLtMatmulDescDestroy)            \
  X(cublasLtMatmulDescSetAttribute)       \
  X(cublasLtMatmulPreferenceCreate)       \
  X(cublasLtMatmulPreferenceDestroy)      \
  X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatmulAlgoGetHeuristic)       \
  X(cublasLtMatmul)
// clang-format on

// Pointers typed from the header's own declarations, so a call through
// the table is checked like a direct call.
#define NASCENT_ENTRY_POINT(f) decltype(&::f) f = nullptr;
struct CublasLt {
  NASCENT_CUBLASLT_ENTRY_POINTS(NASCENT_ENTRY_POINT)
};

// cuBLASLt, loaded on the first call (thread-safe). Throws BackendError,
// the same one on every call, when the library or a function is missing.
const CublasLt& cublaslt();

// One library as loaded, for tests and diagnostics.
struct LibraryInfo {
  std::string soname;                  // e.g. libcublasLt.so.13
  std::string path;                    // where it was opened from
  std::vector<std::string> functions;  // every entry point, resolved
  size_t version = 0;         // what the library reports (major * 10000 ...)
  size_t header_version = 0;  // the headers the backend was compiled with
};

// Loads every library this build calls (cuBLASLt; cuDNN when built with
// it) with all their entry points, without needing a GPU. Throws the
// loaders' BackendError on the first one missing.
std::vector<LibraryInfo> load_libraries();

// cuDNN's part of load_libraries (conv_dnn.cpp); none without cuDNN.
std::vector<LibraryInfo> load_cudnn_library();

}  // namespace nascent::cuda
