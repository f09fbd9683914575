// The whole library in one include: tensors and ops, and the CPU backend.
#pragma once

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/core/ops.h"
#include "nascent/core/tensor.h"
