// cuBLASLt and cuDNN are loaded with dlopen on first use (libraries.h).
// These tests need no GPU, so they run in CI: the loader finds every entry
// point in the installed libraries, reports a missing library or function
// by name, and a process that only uses the CPU never maps the libraries.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nascent/backends/cuda/libraries.h"
#include "nascent/backends/device.h"
#include "nascent/core/error.h"
#include "nascent/core/ops.h"

namespace nascent::cuda {
namespace {

// Lines of /proc/self/maps naming a CUDA library (cuBLAS, cuDNN, the
// driver), joined for a message; empty when none is mapped.
std::string mapped_cuda_libraries() {
  std::ifstream maps("/proc/self/maps");
  std::string line, found;
  while (std::getline(maps, line)) {
    for (const char* lib : {"libcublas", "libcudnn", "libcuda.so"}) {
      if (line.find(lib) != std::string::npos &&
          found.find(line.substr(line.rfind(' ') + 1)) == std::string::npos) {
        found += line.substr(line.rfind(' ') + 1) + " ";
      }
    }
  }
  return found;
}

TEST(CudaLibraries, EveryEntryPointResolves) {
  std::vector<LibraryInfo> libs;
  try {
    libs = load_libraries();
  } catch (const BackendError& e) {
    FAIL() << e.what();
  }
  ASSERT_GE(libs.size(), 1u);
  // cuBLASLt: each function of the table, by name.
  std::vector<std::string> expected;
#define NASCENT_NAME(f) expected.push_back(#f);
  NASCENT_CUBLASLT_ENTRY_POINTS(NASCENT_NAME)
#undef NASCENT_NAME
  EXPECT_EQ(libs[0].soname,
            "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR));
  EXPECT_EQ(libs[0].functions, expected);
  for (const LibraryInfo& lib : libs) {
    SCOPED_TRACE(lib.soname + " from " + lib.path);
    EXPECT_FALSE(lib.path.empty());
    EXPECT_FALSE(lib.functions.empty());
    // A call into the library works without a GPU, and it is the major
    // version the headers describe (x * 10000 + ...).
    EXPECT_EQ(lib.version / 10000, lib.header_version / 10000)
        << "loaded " << lib.version << ", compiled against "
        << lib.header_version;
  }
  // Loading is done once: a second call gives the same table.
  EXPECT_EQ(&cublaslt(), &cublaslt());
  // A call returns the library's own text.
  const char* ok = cublaslt().cublasLtGetStatusString(CUBLAS_STATUS_SUCCESS);
  const char* no =
      cublaslt().cublasLtGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED);
  ASSERT_NE(ok, nullptr);
  ASSERT_NE(no, nullptr);
  EXPECT_GT(std::string(no).size(), 0u);
  EXPECT_NE(std::string(ok), std::string(no));
}

TEST(CudaLibraries, MissingLibraryNamesItAndEachPlaceTried) {
  try {
    SharedLibrary lib("libnascent_no_such_library.so.7", {"/nonexistent/dir"},
                      "a test library");
    FAIL() << "opened a library that does not exist";
  } catch (const BackendError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cannot load libnascent_no_such_library.so.7"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("a test library"), std::string::npos) << msg;
    EXPECT_NE(msg.find("/nonexistent/dir/libnascent_no_such_library.so.7"),
              std::string::npos)
        << msg;
    // dlerror()'s text for the failed attempts.
    EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
  }
}

TEST(CudaLibraries, MissingFunctionNamesItAndTheLibrary) {
  const std::string soname =
      "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  SharedLibrary lib(soname, library_dirs(), "cuBLASLt");
  EXPECT_NE(lib.symbol("cublasLtMatmul"), nullptr);
  try {
    lib.symbol("cublasLtNoSuchFunction");
    FAIL() << "found a function that does not exist";
  } catch (const BackendError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(soname), std::string::npos) << msg;
    EXPECT_NE(msg.find("has no function cublasLtNoSuchFunction"),
              std::string::npos)
        << msg;
  }
}

// Each check runs in a fresh process (a death test re-runs the binary),
// since other tests here load the libraries into this one.
class CudaLibrariesProcess : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(CudaLibrariesProcess, CpuOnlyRunDoesNotMapThem) {
  EXPECT_EXIT(
      {
        auto cpu = make_backend("cpu");
        // 0.5 * 0.5 summed over 64, then over 64 x 64 outputs.
        Tensor a = full({64, 64}, 0.5, *cpu);
        const bool right = sum(matmul(a, a)).item<float>() == 65536.0f;
        std::vector<std::string> names = device_names();
        const std::string mapped = mapped_cuda_libraries();
        std::fprintf(stderr, "mapped: [%s]\n", mapped.c_str());
        const bool listed =
            std::find(names.begin(), names.end(), "cuda") != names.end();
        std::exit(right && listed && mapped.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "mapped: \\[\\]");
}

// The check above can fail: loading the libraries maps them.
TEST_F(CudaLibrariesProcess, LoadingThemMapsThem) {
  EXPECT_EXIT(
      {
        load_libraries();
        const std::string mapped = mapped_cuda_libraries();
        std::fprintf(stderr, "mapped: [%s]\n", mapped.c_str());
        std::exit(mapped.find("libcublasLt") != std::string::npos ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "mapped: \\[.*libcublasLt");
}

}  // namespace
}  // namespace nascent::cuda
