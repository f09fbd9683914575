// safetensors reader: the header validated, then every tensor loaded on the
// CPU backend and its values read back.
#include "nascent/io/safetensors.h"
#include "fuzz/fuzz_target.h"
#include "nascent/core/backend.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nascent;
  static fuzz::ScratchFile file(".safetensors");
  try {
    io::SafetensorsReader reader(file.write(data, size));
    for (const io::SafetensorsEntry& e : reader.entries()) {
      if (reader.find(e.name) != &e) fuzz::fail("entry index");
      Tensor t = reader.load(e.name, default_backend());
      if (t.shape() != e.shape || t.dtype() != e.dtype) fuzz::fail("loaded");
      (void)t.cast(DType::f64).to_vector<double>();
    }
  } catch (const Error&) {
  }
  return 0;
}
