// IDX reader (plain and gzipped) and its conversion to a tensor.
#include "nascent/data/idx.h"
#include "fuzz/fuzz_target.h"
#include "nascent/core/backend.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nascent;
  static fuzz::ScratchFile file(".idx");
  try {
    // A small limit keeps one input from allocating much (the reader's
    // bound, not the fuzzer's, is what is tested).
    data::IdxArray a = data::read_idx(file.write(data, size), 1 << 20);
    Tensor t = data::to_tensor(a, default_backend());
    if (t.shape() != a.shape) fuzz::fail("tensor shape");
    (void)t.cast(DType::f64).to_vector<double>();
  } catch (const Error&) {
  }
  return 0;
}
