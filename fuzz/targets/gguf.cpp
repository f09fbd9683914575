// GGUF reader: every metadata value rendered, every tensor's byte span
// taken and read (ASan sees a span that leaves the buffer).
#include "fuzz/fuzz_target.h"
#include "nascent/io/gguf_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nascent;
  try {
    auto file =
        io::MappedFile::from_bytes(fuzz::to_bytes(data, size), "fuzz.gguf");
    gguf::Reader reader(file);
    size_t chars = 0;
    for (const auto& [key, value] : reader.metadata().entries()) {
      chars += key.size() + value.to_string(4).size();
    }
    unsigned sum = 0;
    for (const gguf::TensorInfo& t : reader.tensors()) {
      if (reader.find_tensor(t.name) != &t) fuzz::fail("tensor index");
      std::span<const std::byte> bytes = reader.tensor_data(t);
      if (bytes.size() != t.size) fuzz::fail("tensor span size");
      if (!bytes.empty()) {
        sum += unsigned(bytes.front()) + unsigned(bytes.back());
      }
    }
    // Keeps the reads above from being optimised away.
    if (chars == size_t(-1) && sum == 1) std::abort();
  } catch (const Error&) {
  }
  return 0;
}
