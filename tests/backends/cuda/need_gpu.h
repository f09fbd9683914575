// Skips a CUDA test, saying why, on a machine whose driver reports no
// device (CI compiles these tests but has no GPU).
#pragma once

#include <gtest/gtest.h>

#include "nascent/backends/cuda/backend.h"

#define NASCENT_NEED_GPU()                                              \
  if (::nascent::cuda::Backend::device_count() == 0) {                  \
    GTEST_SKIP() << "no CUDA device: the driver reports none, so this " \
                    "test of the CUDA backend cannot run here";         \
  }
