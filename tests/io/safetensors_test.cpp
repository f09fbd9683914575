// safetensors: round trips of every dtype and layout, files built by hand
// byte by byte (so the reader is checked against the format, not against
// our writer), every kind of malformed header, and fuzzing: every
// truncation and thousands of bit flips of a valid file must either load
// or raise FormatError naming the file, never crash.
#include "nascent/io/safetensors.h"

#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "conformance/reference.h"
#include "io/test_files.h"
#include "nascent/nascent.h"

namespace nascent::io {
namespace {

using nascent::testing::expect_error;
using nascent::testing::read_bytes;
using nascent::testing::TempDir;
using nascent::testing::write_bytes;

// A file of the given header text and data bytes.
std::vector<uint8_t> make_file(const std::string& header,
                               const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  out.reserve(8 + header.size() + data.size());
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(n >> (8 * i)));
  for (char c : header) out.push_back(uint8_t(c));
  for (uint8_t b : data) out.push_back(b);
  return out;
}

class Safetensors : public ::testing::Test {
 protected:
  Backend& cpu = default_backend();
  TempDir dir;

  // Writes `bytes` and expects reading them to fail with FormatError
  // naming the file and each of `parts`.
  void expect_bad(const std::vector<uint8_t>& bytes,
                  std::initializer_list<std::string> parts) {
    std::string path = dir.file("bad.safetensors");
    write_bytes(path, bytes);
    std::vector<std::string> all(parts);
    all.push_back(path);
    try {
      load_safetensors(path, cpu);
      ADD_FAILURE() << "no exception; expected one mentioning "
                    << *parts.begin();
    } catch (const FormatError& e) {
      std::string msg = e.what();
      for (const std::string& p : all) {
        EXPECT_NE(msg.find(p), std::string::npos)
            << "message \"" << msg << "\" lacks \"" << p << "\"";
      }
    }
  }
};

TEST_F(Safetensors, RoundTripsEveryDTypeAndLayout) {
  std::map<std::string, Tensor> in;
  const DType dtypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16,
                          DType::i32, DType::i64, DType::u8,  DType::boolean};
  uint64_t seed = 1;
  for (DType dt : dtypes) {
    for (conformance::Layout layout : conformance::kLayouts) {
      std::string key = fmt::format("{}.{}", name(dt), name(layout));
      in[key] = conformance::random_tensor({3, 5, 7}, dt, cpu, seed++, layout,
                                           -50.0, 50.0);
    }
    in[fmt::format("{}.scalar", name(dt))] =
        conformance::random_tensor({}, dt, cpu, seed++);
    in[fmt::format("{}.empty", name(dt))] = zeros({4, 0, 2}, cpu, dt);
  }
  Metadata meta{{"note", "round trip"}, {"unicode", "ok \xc3\xa9"}};
  std::string path = dir.file("all.safetensors");
  save_safetensors(path, in, meta);

  Metadata got_meta;
  std::map<std::string, Tensor> out = load_safetensors(path, cpu, &got_meta);
  EXPECT_EQ(got_meta, meta);
  ASSERT_EQ(out.size(), in.size());
  for (const auto& [key, t] : in) {
    ASSERT_TRUE(out.count(key)) << key;
    const Tensor& u = out[key];
    EXPECT_EQ(u.shape(), t.shape()) << key;
    EXPECT_EQ(u.dtype(), t.dtype()) << key;
    EXPECT_EQ(u.to_vector<double>(), t.to_vector<double>()) << key;
  }
  // The data starts 8-byte aligned and the file is exactly header + data.
  std::vector<uint8_t> bytes = read_bytes(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[size_t(i)];
  EXPECT_EQ(n % 8, 0u);
  size_t data = 0;
  for (const auto& [key, t] : in) data += size_t(t.numel()) * t.itemsize();
  EXPECT_EQ(bytes.size(), 8 + n + data);
}

TEST_F(Safetensors, ReadsAFileBuiltByHand) {
  // Two tensors in the opposite order of their names, some header padding,
  // and little-endian values written out byte by byte.
  std::string header =
      R"({"b":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},)"
      R"("a":{"dtype":"BF16","shape":[1,2],"data_offsets":[16,20]},)"
      R"("__metadata__":{"k":"v"}}   )";
  std::vector<uint8_t> data = {
      0x05, 0,    0,    0,    0,    0,    0,    0,     // 5
      0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  // -2
      0x80, 0x3f,                                      // bf16 1.0
      0x40, 0xc0};                                     // bf16 -3.0
  std::string path = dir.file("hand.safetensors");
  write_bytes(path, make_file(header, data));
  SafetensorsReader reader(path);
  ASSERT_EQ(reader.entries().size(), 2u);
  EXPECT_EQ(reader.entries()[0].name, "b");  // In data order.
  EXPECT_EQ(reader.metadata().at("k"), "v");
  Tensor b = reader.load("b", cpu);
  EXPECT_EQ(b.dtype(), DType::i64);
  EXPECT_EQ(b.to_vector<int64_t>(), (std::vector<int64_t>{5, -2}));
  Tensor a = reader.load("a", cpu);
  EXPECT_EQ(a.shape(), (Shape{1, 2}));
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{1.0f, -3.0f}));
  expect_error<ValueError>([&] { reader.load("c", cpu); },
                           {path, "no tensor named \"c\""});
}

TEST_F(Safetensors, EmptyTensorWithLargeDimensionsLoads) {
  std::string path = dir.file("empty.safetensors");
  write_bytes(path, make_file(R"({"e":{"dtype":"F32","shape":[0,2147483648,)"
                              R"(2147483648],"data_offsets":[0,0]}})",
                              {}));
  Tensor e = load_safetensors(path, cpu).at("e");
  EXPECT_EQ(e.shape(), (Shape{0, int64_t(1) << 31, int64_t(1) << 31}));
  EXPECT_EQ(e.numel(), 0);
}

TEST_F(Safetensors, RejectsMalformedHeaders) {
  const std::vector<uint8_t> four(4, 0);
  auto entry = [](const std::string& body) { return "{\"t\":{" + body + "}}"; };
  expect_bad({1, 2, 3}, {"truncated", "8-byte header length"});
  std::vector<uint8_t> huge = make_file("{}", {});
  huge[5] = 0x10;  // A length of 2^44.
  expect_bad(huge, {"header length", "over the limit"});
  std::vector<uint8_t> longer = make_file("{}", {});
  longer[0] = 40;
  expect_bad(longer, {"truncated", "claims 40 bytes but only 2 follow"});
  expect_bad(make_file("", {}), {"not a JSON object"});
  expect_bad(make_file("[1, 2]", {}), {"not a JSON object"});
  expect_bad(make_file("{\"t\": ", {}), {"not valid JSON"});
  expect_bad(
      make_file("{\"a\":" + std::string(20, '[') + std::string(20, ']') + "}",
                {}),
      {"nests deeper"});
  expect_bad(
      make_file(
          entry(R"("dtype":"F32","shape":[1],"data_offsets":[0,4])") + "x",
          four),
      {"not valid JSON"});
  expect_bad(
      make_file(R"({"t":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                R"("t":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})",
                four),
      {"\"t\" appears twice"});
  expect_bad(make_file(R"({"t": 3})", {}),
             {"tensor \"t\" is not a JSON object"});
  expect_bad(
      make_file(entry(R"("dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4])"),
                four),
      {"dtype \"F8_E4M3\" is not supported"});
  expect_bad(
      make_file(entry(R"("dtype":7,"shape":[4],"data_offsets":[0,4])"), four),
      {"dtype is not a string"});
  expect_bad(make_file(entry(R"("shape":[4],"data_offsets":[0,4])"), four),
             {"lacks \"dtype\""});
  expect_bad(make_file(entry(R"("dtype":"U8","data_offsets":[0,4])"), four),
             {"lacks \"shape\""});
  expect_bad(make_file(entry(R"("dtype":"U8","shape":[4])"), four),
             {"lacks \"data_offsets\""});
  expect_bad(
      make_file(entry(R"("dtype":"U8","shape":[4],"data_offsets":[0,4],"x":1)"),
                four),
      {"unknown field \"x\""});
  expect_bad(
      make_file(entry(R"("dtype":"U8","shape":[-4],"data_offsets":[0,4])"),
                four),
      {"shape entry must be a non-negative integer", "-4"});
  expect_bad(
      make_file(entry(R"("dtype":"U8","shape":[2.5],"data_offsets":[0,4])"),
                four),
      {"shape entry must be a non-negative integer"});
  expect_bad(
      make_file(entry(R"("dtype":"U8","shape":4,"data_offsets":[0,4])"), four),
      {"shape is not an array"});
  expect_bad(make_file(entry(R"("dtype":"F32","shape":[4294967296,4294967296],)"
                             R"("data_offsets":[0,4])"),
                       four),
             {"too large"});
  // Issue 16 (found by fuzz/safetensors): a zero dimension hid strides
  // beyond int64, and dimensions above INT64_MAX were stored negative.
  expect_bad(make_file(entry(R"("dtype":"F32","shape":[0,4294967296,)"
                             R"(4294967296],"data_offsets":[0,0])"),
                       {}),
             {"[0,4294967296,4294967296] is too large", "strides"});
  expect_bad(make_file(entry(R"("dtype":"U8","shape":[0,9223372036854775808],)"
                             R"("data_offsets":[0,0])"),
                       {}),
             {"too large"});
  expect_bad(make_file(entry(R"("dtype":"U8","shape":[18446744073709551615,)"
                             R"(0],"data_offsets":[0,0])"),
                       {}),
             {"too large"});
  expect_bad(
      make_file(entry(R"("dtype":"U8","shape":[4],"data_offsets":[0])"), four),
      {"data_offsets must be an array of two integers"});
  expect_bad(
      make_file(entry(R"("dtype":"U8","shape":[4],"data_offsets":[4,0])"),
                four),
      {"end before they begin"});
  expect_bad(
      make_file(entry(R"("dtype":"F32","shape":[2],"data_offsets":[0,4])"),
                four),
      {"needs 8 bytes", "span 4"});
  expect_bad(
      make_file(entry(R"("dtype":"U8","shape":[8],"data_offsets":[0,8])"),
                four),
      {"truncated", "tensor \"t\"", "[0, 8)", "holds 4"});
  expect_bad(
      make_file(entry(R"("dtype":"U8","shape":[2],"data_offsets":[0,2])"),
                four),
      {"2 bytes follow the last tensor"});
  expect_bad(
      make_file(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                R"("b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})",
                {0, 0, 0}),
      {"overlap"});
  expect_bad(
      make_file(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                R"("b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})",
                four),
      {"a hole"});
  expect_bad(make_file(R"({"__metadata__":{"k":1}})", {}),
             {"__metadata__ \"k\" is not a string"});
  expect_bad(make_file(R"({"__metadata__":[]})", {}),
             {"__metadata__ is not an object"});
  expect_bad(
      make_file(entry(R"("dtype":"BOOL","shape":[4],"data_offsets":[0,4])"),
                {0, 1, 2, 0}),
      {"BOOL byte 2"});
  expect_bad(make_file("{\"\xff\":1}", {}), {"not valid JSON"});
}

TEST_F(Safetensors, MissingFileAndBadWrites) {
  expect_error<Error>(
      [&] { load_safetensors(dir.file("absent.safetensors"), cpu); },
      {"absent.safetensors", "cannot open"});
  expect_error<Error>([&] { load_safetensors(dir.path(), cpu); },
                      {"not a regular file"});
  Tensor t = ones({2}, cpu);
  expect_error<ValueError>(
      [&] {
        save_safetensors(dir.file("x"), {{"__metadata__", t}});
      },
      {"\"__metadata__\" cannot name a tensor"});
  expect_error<ValueError>(
      [&] {
        save_safetensors(dir.file("x"), {{"u", Tensor()}});
      },
      {"tensor \"u\" is undefined"});
  expect_error<Error>(
      [&] {
        save_safetensors(dir.path() + "/no/such/dir/x", {{"t", t}});
      },
      {"no/such/dir/x", "cannot create"});
  EXPECT_TRUE(dir.entries().empty());  // Nothing half-written was left.
}

TEST_F(Safetensors, AtomicWriteReplacesWholeFileAndLeavesNoTemporary) {
  std::string path = dir.file("m.safetensors");
  save_safetensors(path, {{"w", full({100}, 1.0, cpu)}});
  save_safetensors(path, {{"w", full({3}, 2.0, cpu)}, {"v", ones({1}, cpu)}});
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"m.safetensors"});
  auto out = load_safetensors(path, cpu);
  EXPECT_EQ(out.at("w").to_vector<float>(), (std::vector<float>{2, 2, 2}));
}

// A valid file with several tensors, for the fuzz tests.
std::vector<uint8_t> fuzz_seed_file(Backend& cpu, const std::string& path) {
  save_safetensors(path,
                   {{"weight", randn({4, 3}, cpu, 1)},
                    {"bias", randn({3}, cpu, 2, DType::f16)},
                    {"ids", arange(5, cpu)},
                    {"mask", gt(randn({6}, cpu, 3), 0.0)},
                    {"empty", zeros({0}, cpu, DType::bf16)}},
                   {{"epoch", "3"}});
  return read_bytes(path);
}

TEST_F(Safetensors, EveryTruncationIsAFormatError) {
  std::vector<uint8_t> good = fuzz_seed_file(cpu, dir.file("seed"));
  std::string path = dir.file("cut.safetensors");
  for (size_t n = 0; n < good.size(); ++n) {
    write_bytes(
        path, std::vector<uint8_t>(good.begin(), good.begin() + ptrdiff_t(n)));
    try {
      load_safetensors(path, cpu);
      ADD_FAILURE() << "a file cut to " << n << " of " << good.size()
                    << " bytes loaded";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
    }
  }
}

TEST_F(Safetensors, BitFlipsLoadOrRaiseFormatError) {
  std::vector<uint8_t> good = fuzz_seed_file(cpu, dir.file("seed"));
  std::string path = dir.file("flip.safetensors");
  std::mt19937_64 rng(7);
  int loaded = 0, rejected = 0;
  // Every bit of the length and header once, then random multi-bit flips.
  size_t header_end = 8 + size_t(good[0]) + size_t(good[1]) * 256;
  std::vector<std::vector<std::pair<size_t, int>>> trials;
  for (size_t byte = 0; byte < header_end; ++byte) {
    for (int bit = 0; bit < 8; ++bit) trials.push_back({{byte, bit}});
  }
  for (int t = 0; t < 500; ++t) {
    std::vector<std::pair<size_t, int>> flips;
    for (int k = 0; k < 1 + int(rng() % 4); ++k) {
      flips.push_back({size_t(rng() % good.size()), int(rng() % 8)});
    }
    trials.push_back(flips);
  }
  for (const auto& flips : trials) {
    std::vector<uint8_t> bytes = good;
    for (auto [byte, bit] : flips) bytes[byte] ^= uint8_t(1u << bit);
    write_bytes(path, bytes);
    try {
      auto out = load_safetensors(path, cpu);
      for (auto& [key, t] : out) t.to_vector<double>();
      ++loaded;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
      ++rejected;
    }
  }
  // Both outcomes occur: flips in the data load, flips in the header mostly
  // do not.
  EXPECT_GT(loaded, 0);
  EXPECT_GT(rejected, int(header_end) * 3);
}

}  // namespace
}  // namespace nascent::io
