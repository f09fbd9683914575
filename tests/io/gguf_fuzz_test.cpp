// Fuzz-style checks of the GGUF reader on a small valid file: every
// truncation and many single-byte corruptions either parse or raise
// FormatError; nothing else escapes (run under the asan preset to check
// memory safety as well).
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <random>

#include <gtest/gtest.h>

#include "nascent/io/gguf_reader.h"
#include "nascent/io/gguf_writer.h"
#include "tests/io/gguf_bytes.h"

namespace nascent::test {
namespace {

using gguf::TensorType;
using gguf::Value;

// A small file touching every part of the format.
std::vector<std::byte> small_file() {
  gguf::Writer w;
  gguf::Metadata& m = w.metadata();
  m.set("general.architecture", Value("llama"));
  m.set("general.alignment", Value(uint32_t(16)));
  m.set("llama.block_count", Value(uint32_t(2)));
  m.set("x.f", Value(0.25f));
  m.set("x.b", Value(true));
  m.set("x.i64", Value(int64_t(-5)));
  m.set("tokenizer.ggml.tokens",
        Value::array(std::vector<std::string>{"<s>", "a", "\xe2\x96\x81"}));
  m.set("tokenizer.ggml.scores",
        Value::array(std::vector<float>{0.0f, -1.0f, -2.0f}));
  m.set("x.bools", Value::array(std::vector<bool>{true, false}));
  m.set("x.nested", Value::array(std::vector<Value>{
                        Value::array(std::vector<uint16_t>{1, 2})}));
  std::mt19937 rng(7);
  auto bytes = [&](size_t n) {
    std::vector<std::byte> b(n);
    for (auto& x : b) x = std::byte(rng() & 0xff);
    return b;
  };
  w.add_tensor("a", {2, 3}, TensorType::f32, bytes(24));
  w.add_tensor("q", {32}, TensorType::q8_0, bytes(34));
  w.add_tensor("h", {5}, TensorType::f16, bytes(10));
  std::string path = ::testing::TempDir() + "nascent_fuzz_" +
                     std::to_string(::getpid()) + ".gguf";
  w.write(path);
  auto file = io::MappedFile::open(path);
  std::vector<std::byte> out(file->bytes().begin(), file->bytes().end());
  std::remove(path.c_str());
  return out;
}

// Parses `bytes`; true if valid, false on FormatError. Any other exception
// fails the test.
bool parses(std::vector<std::byte> bytes, gguf::Reader* out = nullptr) {
  try {
    gguf::Reader r = read_bytes(std::move(bytes), "fuzz.gguf");
    // Touch everything the reader exposes.
    for (const auto& [key, value] : r.metadata().entries()) {
      (void)value.to_string();
    }
    for (const auto& t : r.tensors()) {
      auto d = r.tensor_data(t);
      EXPECT_EQ(d.size(), t.size);
    }
    if (out) *out = std::move(r);
    return true;
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("fuzz.gguf: offset ", 0), 0u)
        << e.what();
    return false;
  }
}

TEST(GgufFuzz, EveryTruncation) {
  std::vector<std::byte> file = small_file();
  gguf::Reader full = read_bytes(file);
  uint64_t needed = 0;
  for (const auto& t : full.tensors()) {
    needed = std::max(needed, full.data_offset() + t.offset + t.size);
  }
  ASSERT_LT(needed, file.size());  // The last tensor is padded.
  for (size_t n = 0; n < file.size(); ++n) {
    std::vector<std::byte> prefix(file.begin(),
                                  file.begin() + std::ptrdiff_t(n));
    gguf::Reader r = read_bytes(GgufBytes().header(0, 0).bytes());
    bool ok = parses(prefix, &r);
    // Only the last tensor's padding may go.
    EXPECT_EQ(ok, n >= needed) << "truncated to " << n << " bytes";
    if (ok) {
      EXPECT_EQ(r.metadata(), full.metadata());
      EXPECT_EQ(r.tensors(), full.tensors());
    }
  }
}

TEST(GgufFuzz, ByteFlips) {
  std::vector<std::byte> file = small_file();
  gguf::Reader full = read_bytes(file);
  int rejected = 0;
  for (size_t i = 0; i < file.size(); ++i) {
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      std::vector<std::byte> bad = file;
      bad[i] ^= std::byte(mask);
      rejected += !parses(std::move(bad));
    }
    for (uint8_t v : {0x00, 0xff, 0x7f}) {
      std::vector<std::byte> bad = file;
      bad[i] = std::byte(v);
      rejected += !parses(std::move(bad));
    }
  }
  // Most of the header is checked: the magic, counts, lengths, types.
  EXPECT_GT(rejected, int(full.data_offset()));
}

TEST(GgufFuzz, RandomCorruptions) {
  std::vector<std::byte> file = small_file();
  std::mt19937 rng(12345);
  for (int round = 0; round < 2000; ++round) {
    std::vector<std::byte> bad = file;
    int flips = 1 + int(rng() % 8);
    for (int k = 0; k < flips; ++k) {
      size_t at = rng() % bad.size();
      // Counts and lengths are the dangerous fields: write large values.
      if (rng() % 2 && at + 8 <= bad.size()) {
        uint64_t v = uint64_t(rng()) << (rng() % 40);
        std::memcpy(bad.data() + at, &v, 8);
      } else {
        bad[at] = std::byte(rng() & 0xff);
      }
    }
    if (rng() % 4 == 0) bad.resize(rng() % bad.size());
    parses(std::move(bad));
  }
}

}  // namespace
}  // namespace nascent::test
