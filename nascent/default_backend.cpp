// The process-wide default backend: the CPU backend unless the user picks
// another with set_default_backend. Lives outside core so that core never
// names a backend.
#include <atomic>

#include "nascent/backends/cpu/backend.h"

namespace nascent {

namespace {
std::atomic<Backend*> g_default{nullptr};
}

Backend& default_backend() {
  if (Backend* b = g_default.load()) return *b;
  static cpu::Backend cpu;
  return cpu;
}

void set_default_backend(Backend* backend) {
  g_default.store(backend);
}

}  // namespace nascent
