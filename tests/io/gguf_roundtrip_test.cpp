// read(write(x)) == x for metadata of every value type and tensors of
// several types, shapes and alignments; atomic replacement of the target.
#include <dirent.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "nascent/io/gguf_reader.h"
#include "nascent/io/gguf_writer.h"

namespace nascent::test {
namespace {

using gguf::TensorType;
using gguf::Value;

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "nascent_" + std::to_string(::getpid()) + "_" +
         name;
}

std::vector<std::byte> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> b(n);
  for (auto& x : b) x = std::byte(rng() & 0xff);
  return b;
}

// Every value type, edge values included.
gguf::Metadata every_value_type() {
  gguf::Metadata m;
  m.set("general.architecture", Value("llama"));
  m.set("t.u8", Value(uint8_t(255)));
  m.set("t.i8", Value(int8_t(-128)));
  m.set("t.u16", Value(uint16_t(65535)));
  m.set("t.i16", Value(int16_t(-32768)));
  m.set("t.u32", Value(uint32_t(4000000000u)));
  m.set("t.i32", Value(int32_t(-2000000000)));
  m.set("t.f32", Value(1.5f));
  m.set("t.f32_nan", Value(std::numeric_limits<float>::quiet_NaN()));
  m.set("t.f32_negzero", Value(-0.0f));
  m.set("t.f32_inf", Value(-std::numeric_limits<float>::infinity()));
  m.set("t.bool_true", Value(true));
  m.set("t.bool_false", Value(false));
  m.set("t.string", Value("h\xc3\xa9llo \xf0\x9f\xa6\x99"));
  m.set("t.string_empty", Value(""));
  m.set("t.string_nul", Value(std::string("a\0b", 3)));
  m.set("t.u64", Value(std::numeric_limits<uint64_t>::max()));
  m.set("t.i64", Value(std::numeric_limits<int64_t>::min()));
  m.set("t.f64", Value(-1e300));
  m.set("a.u8", Value::array(std::vector<uint8_t>{0, 1, 255}));
  m.set("a.u8_empty", Value::array(std::vector<uint8_t>{}));
  m.set("a.i8", Value::array(std::vector<int8_t>{-1, 127}));
  m.set("a.u16", Value::array(std::vector<uint16_t>{7}));
  m.set("a.i16", Value::array(std::vector<int16_t>{-7, 8}));
  m.set("a.u32", Value::array(std::vector<uint32_t>{1, 2, 3}));
  m.set("a.i32", Value::array(std::vector<int32_t>{-1, 0, 1}));
  m.set("a.f32", Value::array(std::vector<float>{0.5f, -2.0f, 1e-30f}));
  m.set("a.bool", Value::array(std::vector<bool>{true, false, true}));
  m.set("a.string",
        Value::array(std::vector<std::string>{"", "<0x0A>", "\xe2\x96\x81"}));
  m.set("a.u64", Value::array(std::vector<uint64_t>{1ull << 40}));
  m.set("a.i64", Value::array(std::vector<int64_t>{-(1ll << 40)}));
  m.set("a.f64", Value::array(std::vector<double>{3.25, -0.0}));
  m.set("a.nested", Value::array(std::vector<Value>{
                        Value::array(std::vector<int32_t>{1, 2}),
                        Value::array(std::vector<std::string>{"x"}),
                        Value::array(std::vector<Value>{
                            Value::array(std::vector<float>{}),
                        }),
                    }));
  m.set("a.nested_empty", Value::array(std::vector<Value>{}));
  return m;
}

struct TensorCase {
  std::string name;
  std::vector<int64_t> shape;
  TensorType type;
};

const std::vector<TensorCase>& tensor_cases() {
  static const std::vector<TensorCase> cases = {
      {"token_embd.weight", {3, 5}, TensorType::f32},
      {"odd", {7}, TensorType::f16},
      {"q4", {2, 64}, TensorType::q4_0},
      {"q4k", {1, 256}, TensorType::q4_k},
      {"q6k", {256}, TensorType::q6_k},
      {"scalar", {}, TensorType::bf16},
      {"four_d", {1, 2, 1, 3}, TensorType::i8},
      {"q8", {3, 32}, TensorType::q8_0},
  };
  return cases;
}

void check_round_trip(uint32_t alignment_or_0) {
  gguf::Writer w;
  w.metadata() = every_value_type();
  if (alignment_or_0) {
    w.metadata().set("general.alignment", Value(alignment_or_0));
  }
  std::vector<std::vector<std::byte>> data;
  uint32_t seed = 1;
  for (const TensorCase& c : tensor_cases()) {
    uint64_t n = gguf::tensor_bytes(c.type, c.shape, c.name);
    data.push_back(random_bytes(size_t(n), seed++));
    if (seed % 2) {
      w.add_tensor(c.name, c.shape, c.type, data.back());
    } else {
      std::vector<std::byte> bytes = data.back();
      w.add_tensor(c.name, c.shape, c.type, [bytes](std::span<std::byte> out) {
        ASSERT_EQ(out.size(), bytes.size());
        std::memcpy(out.data(), bytes.data(), out.size());
      });
    }
  }
  std::string path = temp_path("roundtrip.gguf");
  w.write(path);

  gguf::Reader r(path);
  uint32_t alignment = alignment_or_0 ? alignment_or_0 : 32;
  EXPECT_EQ(r.version(), 3u);
  EXPECT_EQ(r.alignment(), alignment);
  EXPECT_EQ(r.metadata(), w.metadata());
  EXPECT_EQ(r.metadata().origin(), path);
  EXPECT_EQ(r.tensors(), w.tensor_infos());
  EXPECT_EQ(r.data_offset() % alignment, 0u);
  ASSERT_EQ(r.tensors().size(), tensor_cases().size());
  for (size_t i = 0; i < data.size(); ++i) {
    const gguf::TensorInfo& t = r.tensors()[i];
    EXPECT_EQ(t.name, tensor_cases()[i].name);
    EXPECT_EQ(t.shape, tensor_cases()[i].shape);
    EXPECT_EQ(t.type, tensor_cases()[i].type);
    EXPECT_EQ(t.offset % alignment, 0u) << t.name;
    std::span<const std::byte> bytes = r.tensor_data(t);
    ASSERT_EQ(bytes.size(), data[i].size()) << t.name;
    EXPECT_EQ(std::memcmp(bytes.data(), data[i].data(), bytes.size()), 0)
        << t.name;
    if (alignment <= 64) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(bytes.data()) % alignment, 0u)
          << t.name;
    }
  }
  // Each tensor is padded to the alignment, the last one included.
  const gguf::TensorInfo& last = r.tensors().back();
  EXPECT_EQ(r.file_size(),
            r.data_offset() + (last.offset + last.size + alignment - 1) /
                                  alignment * alignment);
  std::remove(path.c_str());
}

TEST(GgufRoundTrip, DefaultAlignment) {
  check_round_trip(0);
}
TEST(GgufRoundTrip, Alignment1) {
  check_round_trip(1);
}
TEST(GgufRoundTrip, Alignment64) {
  check_round_trip(64);
}
TEST(GgufRoundTrip, Alignment4096) {
  check_round_trip(4096);
}

TEST(GgufRoundTrip, MetadataOnly) {
  gguf::Writer w;
  w.metadata() = every_value_type();
  std::string path = temp_path("meta_only.gguf");
  w.write(path);
  gguf::Reader r(path);
  EXPECT_EQ(r.metadata(), w.metadata());
  EXPECT_TRUE(r.tensors().empty());
  // The writer adds no padding when there is no data section.
  EXPECT_EQ(r.data_offset(), (r.file_size() + 31) / 32 * 32);
  std::remove(path.c_str());
}

TEST(GgufRoundTrip, ValueAccessors) {
  gguf::Metadata m = every_value_type();
  EXPECT_EQ(m.get_int("t.u8"), 255);
  EXPECT_EQ(m.get_int("t.i64"), std::numeric_limits<int64_t>::min());
  EXPECT_THROW(m.get_int("t.u64"), FormatError);  // Does not fit in int64.
  EXPECT_EQ(m.get_double("t.f32"), 1.5);
  EXPECT_EQ(m.get_double("t.u32"), 4000000000.0);
  EXPECT_TRUE(m.get_bool("t.bool_true"));
  EXPECT_EQ(m.get_string("t.string_nul"), std::string("a\0b", 3));
  EXPECT_EQ(m.get_array<float>("a.f32").size(), 3u);
  EXPECT_THROW(m.get_array<int32_t>("a.f32"), FormatError);
  EXPECT_EQ(m.at("a.nested").to_string(), "[[1, 2], [\"x\"], [[]]]");
  EXPECT_EQ(m.at("t.string").to_string(), "\"h\xc3\xa9llo \xf0\x9f\xa6\x99\"");
  EXPECT_EQ(Value::array(std::vector<int32_t>{1, 2, 3, 4}).to_string(2),
            "[1, 2, ... (2 more)]");
  // Bitwise float comparison: NaN equals itself, -0 differs from +0.
  EXPECT_EQ(m.at("t.f32_nan"), Value(std::numeric_limits<float>::quiet_NaN()));
  EXPECT_NE(m.at("t.f32_negzero"), Value(0.0f));
  EXPECT_NE(Value(uint32_t(1)), Value(int32_t(1)));
  // set() keeps the position of an existing key; erase() removes it.
  m.set("t.u8", Value(uint8_t(1)));
  EXPECT_EQ(m.entries()[1].first, "t.u8");
  EXPECT_TRUE(m.erase("t.u8"));
  EXPECT_FALSE(m.contains("t.u8"));
  EXPECT_EQ(m.get_int("t.i8"), -128);
}

TEST(GgufWriter, RejectsBadTensors) {
  gguf::Writer w;
  w.add_tensor("a", {4}, TensorType::f32, std::vector<std::byte>(16));
  auto expect_error = [&](auto&& add, const std::string& what) {
    try {
      add();
      ADD_FAILURE() << "expected: " << what;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos)
          << e.what();
    }
  };
  expect_error(
      [&] {
        w.add_tensor("a", {4}, TensorType::f32, std::vector<std::byte>(16));
      },
      "gguf writer: tensor 'a': duplicate tensor name");
  expect_error(
      [&] {
        w.add_tensor(std::string(64, 'n'), {4}, TensorType::f32,
                     std::vector<std::byte>(16));
      },
      "name is 64 bytes long");
  expect_error(
      [&] {
        w.add_tensor("b", {4}, TensorType::f32, std::vector<std::byte>(15));
      },
      "tensor 'b': 15 bytes given, F32 of shape [4] needs 16");
  expect_error(
      [&] {
        w.add_tensor("c", {2, 16}, TensorType::q4_0,
                     std::vector<std::byte>(18));
      },
      "last dimension 16 is not a multiple of Q4_0's block size 32");
  expect_error(
      [&] {
        w.add_tensor("d", {3, 0}, TensorType::f32, std::vector<std::byte>());
      },
      "dimension 0 is not positive");
  expect_error(
      [&] {
        w.add_tensor("e", {1, 1, 1, 1, 1}, TensorType::f32,
                     std::vector<std::byte>(4));
      },
      "5 dimensions, at most 4");
  w.metadata().set("general.alignment", Value(uint64_t(32)));
  expect_error([&] { w.write(temp_path("never.gguf")); },
               "general.alignment must be a u32, not u64");
  w.metadata().set("general.alignment", Value(uint32_t(24)));
  expect_error([&] { w.write(temp_path("never.gguf")); },
               "general.alignment 24 is not a power of two");
}

std::vector<std::string> temp_files_like(const std::string& path) {
  std::string dir = path.substr(0, path.rfind('/'));
  std::string base = path.substr(path.rfind('/') + 1) + ".tmp.";
  std::vector<std::string> found;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (std::string(e->d_name).rfind(base, 0) == 0)
        found.push_back(e->d_name);
    }
    ::closedir(d);
  }
  return found;
}

TEST(GgufWriter, ReplacesTheFileAtomically) {
  std::string path = temp_path("atomic.gguf");
  gguf::Writer first;
  first.metadata().set("general.name", Value("first"));
  first.write(path);

  // A failure half-way leaves the old file whole and no temporary behind.
  gguf::Writer failing;
  failing.metadata().set("general.name", Value("second"));
  failing.add_tensor("w", {1024}, TensorType::f32,
                     [](std::span<std::byte>) -> void {
                       throw ValueError("producer failed");
                     });
  EXPECT_THROW(failing.write(path), ValueError);
  EXPECT_EQ(gguf::Reader(path).metadata().get_string("general.name"), "first");
  EXPECT_TRUE(temp_files_like(path).empty());

  gguf::Writer second;
  second.metadata().set("general.name", Value("second"));
  second.write(path);
  EXPECT_EQ(gguf::Reader(path).metadata().get_string("general.name"), "second");
  EXPECT_TRUE(temp_files_like(path).empty());
  std::remove(path.c_str());
}

TEST(GgufWriter, UnwritablePathIsAnIoError) {
  gguf::Writer w;
  try {
    w.write("/nonexistent-folder-nascent/x.gguf");
    ADD_FAILURE();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-folder-nascent/x.gguf"),
              std::string::npos)
        << e.what();
  }
}

TEST(GgufReader, MissingFileIsAnIoError) {
  EXPECT_THROW(gguf::Reader("/nonexistent-folder-nascent/x.gguf"), IoError);
  try {
    gguf::Reader r(::testing::TempDir());
    ADD_FAILURE();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace nascent::test
