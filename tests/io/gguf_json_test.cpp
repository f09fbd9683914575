// GGUF metadata through JSON: every value type and array type comes back
// equal and in order; malformed JSON and what JSON cannot hold are errors.
#include "nascent/io/gguf_json.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/io/test_files.h"

namespace nascent::gguf {
namespace {

using nlohmann::json;
using testing::expect_error;

Metadata every_type() {
  Metadata m;
  m.set("u8", Value(uint8_t(255)));
  m.set("i8", Value(int8_t(-128)));
  m.set("u16", Value(uint16_t(65535)));
  m.set("i16", Value(int16_t(-32768)));
  m.set("u32", Value(uint32_t(4294967295u)));
  m.set("i32", Value(int32_t(-2147483647 - 1)));
  m.set("f32", Value(0.1f));
  m.set("bool", Value(true));
  m.set("string", Value("caf\xc3\xa9 \xe2\x96\x81"));
  m.set("u64", Value(uint64_t(18446744073709551615ull)));
  m.set("i64", Value(int64_t(-9223372036854775807ll - 1)));
  m.set("f64", Value(1.0 / 3.0));
  m.set("tokens",
        Value::array(std::vector<std::string>{"<s>", "\xe2\x96\x81the"}));
  m.set("scores", Value::array(std::vector<float>{0.0f, -1.5f, 3.25e-7f}));
  m.set("types", Value::array(std::vector<int32_t>{1, 3, 6}));
  m.set("flags", Value::array(std::vector<bool>{true, false}));
  m.set("empty", Value::array(std::vector<uint32_t>{}));
  m.set("big", Value::array(std::vector<uint64_t>{0, 18446744073709551615ull}));
  return m;
}

TEST(GgufJson, EveryTypeRoundTripsInOrder) {
  const Metadata m = every_type();
  const json j = to_json(m);
  // Through text, as a checkpoint stores it.
  const Metadata back = metadata_from_json(json::parse(j.dump()), "test");
  EXPECT_EQ(back, m);
  ASSERT_EQ(back.entries().size(), m.entries().size());
  EXPECT_EQ(back.entries().front().first, "u8");
  EXPECT_EQ(back.at("scores").element_type(), ValueType::f32);
  EXPECT_EQ(back.at("u8").type(), ValueType::u8);
  EXPECT_EQ(j[6][1]["type"], "f32");
  EXPECT_EQ(j[12][1]["type"], "string[]");
}

TEST(GgufJson, WhatJsonCannotHoldIsAnError) {
  Metadata m;
  m.set("tokenizer.ggml.scores",
        Value::array(std::vector<float>{0.0f, std::nanf("")}));
  expect_error<ValueError>([&] { to_json(m); },
                           {"tokenizer.ggml.scores", "non-finite"});
  Metadata nested;
  nested.set("a", Value(ArrayItems(std::vector<Value>{
                      Value::array(std::vector<int32_t>{1})})));
  expect_error<ValueError>([&] { to_json(nested); }, {"arrays of arrays"});
}

TEST(GgufJson, MalformedJsonNamesTheOriginAndKey) {
  auto bad = [](const json& j, std::initializer_list<std::string> parts) {
    expect_error<FormatError>([&] { metadata_from_json(j, "ckpt"); }, parts);
  };
  bad(json::object(), {"ckpt", "not an array"});
  bad(json::array({1}), {"ckpt", "[key, {type, value}]"});
  bad(json::parse(R"([["k", {"type": "u8", "value": 256}]])"),
      {"ckpt: k", "integer"});
  bad(json::parse(R"([["k", {"type": "i8", "value": -129}]])"),
      {"ckpt: k", "integer"});
  bad(json::parse(R"([["k", {"type": "u32", "value": -1}]])"),
      {"ckpt: k", "integer"});
  bad(json::parse(R"([["k", {"type": "u32", "value": 1.5}]])"),
      {"ckpt: k", "integer"});
  bad(json::parse(R"([["k", {"type": "quux", "value": 1}]])"),
      {"ckpt: k", "unknown GGUF type \"quux\""});
  bad(json::parse(R"([["k", {"type": "string[]", "value": "x"}]])"),
      {"ckpt: k", "not an array"});
  bad(json::parse(R"([["k", {"type": "string[]", "value": [1]}]])"),
      {"ckpt: k", "not a string"});
  bad(json::parse(R"([["k", {"type": "bool", "value": 1}]])"),
      {"ckpt: k", "not a boolean"});
  bad(json::parse(R"([["k", {"type": "array", "value": []}]])"),
      {"ckpt: k", "unknown GGUF type \"array\""});
}

}  // namespace
}  // namespace nascent::gguf
