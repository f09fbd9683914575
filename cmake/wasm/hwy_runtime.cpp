// The parts of libhwy that Highway's headers can call in a wasm build (Debian
// has no wasm build of libhwy). Only one target, HWY_WASM, is compiled, so it
// is the only one supported and the chosen one.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "hwy/highway.h"
#include "hwy/targets.h"

namespace hwy {

HWY_NORETURN void HWY_FORMAT(3, 4)
    Abort(const char* file, int line, const char* format, ...) {
  std::fprintf(stderr, "Abort at %s:%d: ", file, line);
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
  std::abort();
}

int64_t SupportedTargets() {
  return HWY_TARGETS;
}

ChosenTarget& GetChosenTarget() {
  static ChosenTarget chosen;
  return chosen;
}

}  // namespace hwy
