// Test data that lives outside the repository: llama.cpp's tokenizer vectors
// and chat templates, which scripts/setup_testdata.sh takes from
// llama-cpp-python's source distribution into build/testdata (../shared/data
// is the fallback). Its folder comes from the NASCENT_TEST_DATA_DIR compile
// definition, overridden at run time by the NASCENT_DATA_DIR environment
// variable. Tests that need a file skip, saying which and why, when the file
// is absent (setup_testdata.sh not run); CI always has it.
#pragma once

#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

namespace nascent::test {

inline std::string shared_data_dir() {
  if (const char* env = std::getenv("NASCENT_DATA_DIR"); env && *env) {
    return env;
  }
#ifdef NASCENT_TEST_DATA_DIR
  return NASCENT_TEST_DATA_DIR;
#else
  return "../shared/data";
#endif
}

inline std::string shared_data_path(const std::string& relative) {
  return shared_data_dir() + "/" + relative;
}

inline bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace nascent::test

// Sets `var` to the path of shared data file `relative`, or skips the test
// with a message naming the missing file.
#define NASCENT_SHARED_FILE_OR_SKIP(var, relative)                          \
  std::string var = ::nascent::test::shared_data_path(relative);            \
  if (!::nascent::test::file_exists(var)) {                                 \
    GTEST_SKIP() << "skipped: shared test data " << var                     \
                 << " is absent (set NASCENT_DATA_DIR or the CMake option " \
                    "NASCENT_DATA_DIR to the folder holding tokenizer/)";   \
  }
