// Malformed GGUF files: each gives a FormatError naming the file, the byte
// offset and the fault, before any large allocation.
#include <limits>

#include <gtest/gtest.h>

#include "tests/io/gguf_bytes.h"

namespace nascent::test {
namespace {

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

TEST(GgufMalformed, HeaderFaults) {
  expect_format_error(GgufBytes(), 0, "not a GGUF file");
  expect_format_error(GgufBytes().raw("GGML", 4).u32(3).u64(0).u64(0), 0,
                      "not a GGUF file");
  expect_format_error(GgufBytes().header(0, 0, 1), 4, "version 1 is not");
  expect_format_error(GgufBytes().header(0, 0, 7), 4,
                      "unsupported GGUF version 7");
  expect_format_error(GgufBytes().header(0, 0, 0x03000000u), 4, "big-endian");
  expect_format_error(GgufBytes().raw("GGUF", 4).u32(3), 8,
                      "tensor count (8 bytes) runs past the end");
  expect_format_error(GgufBytes().raw("GGUF", 4).u32(3).u64(0).u32(0), 16,
                      "metadata count");
}

TEST(GgufMalformed, CountsLargerThanTheFile) {
  expect_format_error(GgufBytes().header(0, uint64_t(1) << 62), 16,
                      "4611686018427387904 metadata entries cannot fit");
  expect_format_error(GgufBytes().header(kU64Max, 0), 8,
                      "18446744073709551615 tensor infos cannot fit");
  // One key-value announced, none present.
  expect_format_error(GgufBytes().header(0, 1), 16,
                      "1 metadata entries cannot fit");
}

TEST(GgufMalformed, StringLengths) {
  GgufBytes f;
  f.header(0, 1).u64(kU64Max).zeros(16);
  expect_format_error(f, 24, "length 18446744073709551615 runs past the end");
  GgufBytes g;
  g.header(0, 1).str("general.name").u32(8).u64(1000).raw("abc", 3);
  expect_format_error(g, 24 + 8 + 12 + 4, "length 1000 runs past the end");
}

TEST(GgufMalformed, Keys) {
  expect_format_error(GgufBytes().header(0, 1).str("").u32(4).u32(1), 24,
                      "metadata key 0 is empty");
  GgufBytes dup;
  dup.header(0, 2).kv_u32("a.b", 1).kv_u32("a.b", 2);
  expect_format_error(dup, 24 + 8 + 3 + 8, "duplicate metadata key 'a.b'");
  GgufBytes longkey;
  longkey.header(0, 1).str(std::string(65536, 'k')).u32(4).u32(1);
  expect_format_error(longkey, 24, "65536 bytes long");
}

TEST(GgufMalformed, ValueTypes) {
  expect_format_error(GgufBytes().header(0, 1).str("k").u32(13).u32(0), 33,
                      "k: unknown value type 13");
  expect_format_error(GgufBytes().header(0, 1).str("k").u32(7).u8(2), 37,
                      "k: bool byte is 2, not 0 or 1");
  // A value cut short.
  expect_format_error(GgufBytes().header(0, 1).str("k").u32(12).u32(0), 37,
                      "k (8 bytes) runs past the end");
}

TEST(GgufMalformed, Arrays) {
  // 2^62 u32 values need 2^64 bytes: the bound check must not overflow.
  GgufBytes huge;
  huge.header(0, 1).str("k").u32(9).u32(4).u64(uint64_t(1) << 62).zeros(8);
  expect_format_error(huge, 37,
                      "array of 4611686018427387904 u32 values needs more "
                      "than 2^64 bytes, the file has 8 left");
  GgufBytes strings;
  strings.header(0, 1).str("k").u32(9).u32(8).u64(3).str("a").str("b");
  expect_format_error(strings, 37, "array of 3 string values");
  GgufBytes bad_element;
  bad_element.header(0, 1).str("k").u32(9).u32(99).u64(0);
  expect_format_error(bad_element, 37, "k: unknown value type 99");
  GgufBytes bad_bool;
  bad_bool.header(0, 1).str("k").u32(9).u32(7).u64(2).u8(1).u8(7);
  expect_format_error(bad_bool, 37 + 12 + 1, "bool byte is 7");
}

// Arrays of arrays are read up to kMaxArrayDepth levels.
GgufBytes nested(int depth) {
  GgufBytes f;
  f.header(0, 1).str("k").u32(9);
  for (int d = 1; d < depth; ++d) f.u32(9).u64(1);
  f.u32(5).u64(1).u32(42);
  return f;
}

TEST(GgufMalformed, NestedArrays) {
  gguf::Reader ok = read_bytes(nested(gguf::kMaxArrayDepth).bytes());
  const gguf::Value* v = &ok.metadata().at("k");
  for (int d = 1; d < gguf::kMaxArrayDepth; ++d) {
    ASSERT_EQ(v->element_type(), gguf::ValueType::array);
    ASSERT_EQ(v->array_size(), 1u);
    v = &v->array_of<gguf::Value>()[0];
  }
  EXPECT_EQ(v->array_of<int32_t>(), std::vector<int32_t>{42});
  size_t at = 37 + 12 * size_t(gguf::kMaxArrayDepth - 1);
  expect_format_error(nested(gguf::kMaxArrayDepth + 1), at,
                      "nested more than 8 deep");
}

TEST(GgufMalformed, Alignment) {
  GgufBytes wrong_type;
  wrong_type.header(0, 1).str("general.alignment").u32(10).u64(32);
  expect_format_error(wrong_type, 24, "general.alignment has type u64");
  expect_format_error(GgufBytes().header(0, 1).kv_u32("general.alignment", 0),
                      24, "general.alignment 0 is not a power of two");
  expect_format_error(GgufBytes().header(0, 1).kv_u32("general.alignment", 48),
                      24, "general.alignment 48 is not a power of two");
}

// A file with one tensor info and enough data after it.
GgufBytes one_tensor(std::vector<uint64_t> ne, uint32_t type, uint64_t offset,
                     size_t data = 64) {
  GgufBytes f;
  f.header(1, 0).tensor("w", std::move(ne), type, offset).pad_to(32);
  return f.zeros(data);
}

TEST(GgufMalformed, TensorDims) {
  // The tensor info starts at 24, its dimension count at 24 + 8 + 1.
  expect_format_error(one_tensor({1, 1, 1, 1, 1}, 0, 0), 33,
                      "tensor 'w' has 5 dimensions (at most 4)");
  expect_format_error(one_tensor({4, 0}, 0, 0), 45,
                      "tensor 'w' dimension 1 is 0");
  expect_format_error(one_tensor({uint64_t(1) << 63}, 0, 0), 37,
                      "dimension 0 is 9223372036854775808");
  expect_format_error(one_tensor({uint64_t(1) << 62, 4}, 0, 0), 33,
                      "element count overflows int64");
  // F64: 2^62 elements fit in int64, their 2^65 bytes do not.
  expect_format_error(one_tensor({uint64_t(1) << 61, 2}, 28, 0), 33,
                      "byte size overflows int64");
}

TEST(GgufMalformed, TensorTypes) {
  expect_format_error(one_tensor({32}, 4, 0), 45,
                      "tensor 'w' has unknown type id 4");
  expect_format_error(one_tensor({32}, 40, 0), 45, "unknown type id 40");
  expect_format_error(one_tensor({16, 2}, 2, 0), 33,
                      "last dimension 16 is not a multiple of Q4_0's block "
                      "size 32");
}

TEST(GgufMalformed, TensorOffsetsAndExtents) {
  expect_format_error(one_tensor({4}, 0, 8), 49,
                      "tensor 'w' data offset 8 is not a multiple of the "
                      "alignment 32");
  // 16 floats = 64 bytes, only 32 present.
  expect_format_error(one_tensor({16}, 0, 0, 32), 24,
                      "tensor 'w' data [0, 64) of the data section runs past "
                      "the end of the file");
  // offset + size wraps around 2^64.
  expect_format_error(one_tensor({16}, 0, kU64Max - 31), 24,
                      "[18446744073709551584, 2^64+)");
  GgufBytes dup;
  dup.header(2, 0).tensor("w", {4}, 0, 0).tensor("w", {4}, 0, 32).pad_to(32);
  dup.zeros(64);
  expect_format_error(dup, 24 + 33, "duplicate tensor name 'w'");
  GgufBytes overlap;
  overlap.header(2, 0).tensor("a", {16}, 0, 32).tensor("b", {16}, 0, 0);
  overlap.pad_to(32).zeros(128);
  expect_format_error(overlap, 24,
                      "tensor 'a' data [32, 96) overlaps tensor "
                      "'b' data [0, 64)");
}

TEST(GgufMalformed, AcceptsMinimalFiles) {
  // No tensors, no data section: llama.cpp's vocab-only files look so.
  gguf::Reader empty = read_bytes(GgufBytes().header(0, 0).bytes());
  EXPECT_EQ(empty.version(), 3u);
  EXPECT_TRUE(empty.metadata().empty());
  EXPECT_TRUE(empty.tensors().empty());
  gguf::Reader v2 = read_bytes(GgufBytes().header(0, 0, 2).bytes());
  EXPECT_EQ(v2.version(), 2u);
  // A 0-d tensor holds one element.
  GgufBytes scalar;
  scalar.header(1, 0).tensor("s", {}, 0, 0).pad_to(32).f32(2.5f);
  gguf::Reader r = read_bytes(scalar.bytes());
  ASSERT_EQ(r.tensors().size(), 1u);
  EXPECT_TRUE(r.tensors()[0].shape.empty());
  EXPECT_EQ(r.tensors()[0].size, 4u);
  float v;
  std::memcpy(&v, r.tensor_data("s").data(), 4);
  EXPECT_EQ(v, 2.5f);
}

TEST(GgufMalformed, MissingTensorNamesTheFile) {
  gguf::Reader r = read_bytes(GgufBytes().header(0, 0).bytes(), "m.gguf");
  EXPECT_EQ(r.find_tensor("x"), nullptr);
  try {
    r.tensor("token_embd.weight");
    ADD_FAILURE();
  } catch (const FormatError& e) {
    EXPECT_STREQ(e.what(), "m.gguf: no tensor named 'token_embd.weight'");
  }
}

TEST(GgufMalformed, MetadataTypeErrorsNameFileAndKey) {
  GgufBytes f;
  f.header(0, 1).kv_u32("llama.block_count", 7);
  gguf::Reader r = read_bytes(f.bytes(), "m.gguf");
  EXPECT_EQ(r.metadata().get_int("llama.block_count"), 7);
  try {
    r.metadata().get_string("llama.block_count");
    ADD_FAILURE();
  } catch (const FormatError& e) {
    EXPECT_STREQ(e.what(),
                 "m.gguf: metadata key 'llama.block_count': gguf "
                 "value: expected string, found u32");
  }
  try {
    r.metadata().get_int("llama.context_length");
    ADD_FAILURE();
  } catch (const FormatError& e) {
    EXPECT_STREQ(e.what(),
                 "m.gguf: metadata key 'llama.context_length' is missing");
  }
  EXPECT_FALSE(r.metadata().find_int("llama.context_length").has_value());
}

}  // namespace
}  // namespace nascent::test
