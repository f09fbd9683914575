// Builds GGUF files byte by byte, so tests can write what the writer never
// would: wrong counts, bad types, overflowing sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nascent/io/file.h"
#include "nascent/io/gguf_reader.h"

namespace nascent::test {

class GgufBytes {
 public:
  GgufBytes& raw(const void* p, size_t n) {
    size_t at = b_.size();
    b_.resize(at + n);
    if (n) std::memcpy(b_.data() + at, p, n);
    return *this;
  }
  GgufBytes& u8(uint8_t v) { return raw(&v, 1); }
  GgufBytes& u32(uint32_t v) { return raw(&v, 4); }
  GgufBytes& u64(uint64_t v) { return raw(&v, 8); }
  GgufBytes& f32(float v) { return raw(&v, 4); }
  GgufBytes& str(const std::string& s) {
    u64(s.size());
    return raw(s.data(), s.size());
  }
  GgufBytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    raw("GGUF", 4);
    u32(version);
    u64(n_tensors);
    return u64(n_kv);
  }
  GgufBytes& kv_u32(const std::string& key, uint32_t v) {
    str(key);
    u32(4);
    return u32(v);
  }
  // A tensor info; `ne` in file order (ne[0], the fastest axis, first).
  GgufBytes& tensor(const std::string& name, std::vector<uint64_t> ne,
                    uint32_t type, uint64_t offset) {
    str(name);
    u32(uint32_t(ne.size()));
    for (uint64_t d : ne) u64(d);
    u32(type);
    return u64(offset);
  }
  GgufBytes& pad_to(size_t alignment) {
    while (b_.size() % alignment) u8(0);
    return *this;
  }
  GgufBytes& zeros(size_t n) {
    b_.resize(b_.size() + n);
    return *this;
  }
  size_t size() const { return b_.size(); }
  const std::vector<std::byte>& bytes() const { return b_; }

 private:
  std::vector<std::byte> b_;
};

inline gguf::Reader read_bytes(std::vector<std::byte> bytes,
                               std::string name = "bad.gguf") {
  return gguf::Reader(io::MappedFile::from_bytes(std::move(bytes), name));
}

// Expects a FormatError whose message names the file, the offset and
// contains `what`.
inline void expect_format_error(const GgufBytes& file, size_t offset,
                                const std::string& what) {
  try {
    read_bytes(file.bytes());
    ADD_FAILURE() << "no error; expected one at offset " << offset << ": "
                  << what;
  } catch (const FormatError& e) {
    std::string msg = e.what();
    std::string where = "bad.gguf: offset " + std::to_string(offset) + ": ";
    EXPECT_EQ(msg.rfind(where, 0), 0u) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

}  // namespace nascent::test
