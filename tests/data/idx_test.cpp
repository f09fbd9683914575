// IDX reader: files built here byte by byte (every supported type, both
// plain and gzipped), malformed headers, truncation at every length, and
// headers that claim far more data than the file holds.
#include "nascent/data/idx.h"

#include <cstring>

#include <gtest/gtest.h>

#include "io/test_files.h"
#include "nascent/core/ops.h"
#include "nascent/data/gzip_file.h"

namespace nascent::data {
namespace {

using nascent::testing::expect_error;
using nascent::testing::TempDir;
using nascent::testing::write_bytes;

std::vector<uint8_t> idx_header(uint8_t type, std::vector<uint32_t> dims) {
  std::vector<uint8_t> out = {0, 0, type, uint8_t(dims.size())};
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(uint8_t(d >> s));
  }
  return out;
}

// gzip of an IDX u8 [2, 3] file holding 10..15 (Python's gzip, mtime 0).
const std::vector<uint8_t> kGzipped = {
    0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0x63, 0x60,
    0xe0, 0x60, 0x62, 0x60, 0x60, 0x00, 0x61, 0x66, 0x2e, 0x6e, 0x1e, 0x5e,
    0x3e, 0x7e, 0x00, 0x4c, 0x4c, 0x73, 0x4f, 0x12, 0x00, 0x00, 0x00};

class Idx : public ::testing::Test {
 protected:
  TempDir dir;
  std::string path = dir.file("data.idx");

  void expect_bad(const std::vector<uint8_t>& bytes,
                  std::initializer_list<std::string> parts) {
    write_bytes(path, bytes);
    std::vector<std::string> all(parts);
    try {
      read_idx(path, 1 << 20);
      ADD_FAILURE() << "no exception; expected " << *parts.begin();
    } catch (const FormatError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find(path), std::string::npos) << msg;
      for (const std::string& p : all) {
        EXPECT_NE(msg.find(p), std::string::npos)
            << "message \"" << msg << "\" lacks \"" << p << "\"";
      }
    }
  }
};

TEST_F(Idx, ReadsEverySupportedTypeBigEndian) {
  std::vector<uint8_t> u8 = idx_header(0x08, {2, 3});
  for (int i = 0; i < 6; ++i) u8.push_back(uint8_t(250 + i % 6));
  write_bytes(path, u8);
  IdxArray a = read_idx(path);
  EXPECT_EQ(a.dtype, DType::u8);
  EXPECT_EQ(a.shape, (Shape{2, 3}));
  EXPECT_EQ(to_tensor(a, default_backend()).to_vector<int64_t>(),
            (std::vector<int64_t>{250, 251, 252, 253, 254, 255}));

  std::vector<uint8_t> i32 = idx_header(0x0C, {2});
  for (uint8_t b : {0xff, 0xff, 0xff, 0xfe, 0x00, 0x01, 0x00, 0x00}) {
    i32.push_back(b);
  }
  write_bytes(path, i32);
  EXPECT_EQ(to_tensor(read_idx(path), default_backend()).to_vector<int64_t>(),
            (std::vector<int64_t>{-2, 65536}));

  std::vector<uint8_t> f32 = idx_header(0x0D, {1, 1, 1});
  for (uint8_t b : {0x3f, 0xc0, 0x00, 0x00}) f32.push_back(b);  // 1.5
  write_bytes(path, f32);
  IdxArray f = read_idx(path);
  EXPECT_EQ(f.shape, (Shape{1, 1, 1}));
  EXPECT_EQ(to_tensor(f, default_backend()).item<float>(), 1.5f);

  std::vector<uint8_t> f64 = idx_header(0x0E, {1});
  for (uint8_t b : {0xc0, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18}) {
    f64.push_back(b);  // -pi
  }
  write_bytes(path, f64);
  EXPECT_EQ(to_tensor(read_idx(path), default_backend()).item<double>(),
            -3.141592653589793);

  write_bytes(path, idx_header(0x08, {4, 0}));
  EXPECT_EQ(read_idx(path).shape, (Shape{4, 0}));
}

TEST_F(Idx, GzippedFilesInflateWhereZlibIs) {
  write_bytes(path, kGzipped);
  if (!has_zlib()) {
    // The WebAssembly build has no zlib: it says so instead of misreading.
    expect_error<Error>([&] { read_idx(path); },
                        {path, "gzip-compressed", "no zlib"});
    return;
  }
  IdxArray a = read_idx(path);
  EXPECT_EQ(a.shape, (Shape{2, 3}));
  EXPECT_EQ(to_tensor(a, default_backend()).to_vector<int64_t>(),
            (std::vector<int64_t>{10, 11, 12, 13, 14, 15}));
  // Every truncation of the compressed stream is an error.
  for (size_t n = 2; n < kGzipped.size(); ++n) {
    write_bytes(path, std::vector<uint8_t>(kGzipped.begin(),
                                           kGzipped.begin() + ptrdiff_t(n)));
    EXPECT_THROW(read_idx(path), FormatError) << "cut to " << n;
  }
  // A wrong CRC or length in the trailer is caught.
  for (size_t byte : {kGzipped.size() - 8, kGzipped.size() - 1}) {
    std::vector<uint8_t> bad = kGzipped;
    bad[byte] ^= 0x01;
    write_bytes(path, bad);
    EXPECT_THROW(read_idx(path), FormatError) << "trailer byte " << byte;
  }
  // Corrupt deflate data.
  std::vector<uint8_t> bad = kGzipped;
  bad[12] ^= 0xff;
  write_bytes(path, bad);
  EXPECT_THROW(read_idx(path), FormatError);
}

TEST_F(Idx, RejectsMalformedHeaders) {
  expect_bad({0, 0}, {"truncated", "magic number"});
  expect_bad({1, 0, 8, 1, 0, 0, 0, 0}, {"not an IDX file", "0x0100"});
  expect_bad(idx_header(0x07, {1}), {"unknown IDX type code 0x07"});
  expect_bad(idx_header(0x09, {1}), {"0x09 (signed byte) is not supported"});
  expect_bad(idx_header(0x0B, {1}), {"0x0B (short) is not supported"});
  expect_bad({0, 0, 8, 0}, {"rank 0 is outside [1, 16]"});
  expect_bad({0, 0, 8, 17}, {"rank 17"});
  expect_bad({0, 0, 8, 2, 0, 0, 0, 1, 0, 0}, {"truncated", "dimensions"});
  std::vector<uint8_t> short_data = idx_header(0x08, {2, 3});
  short_data.resize(short_data.size() + 5);
  expect_bad(short_data,
             {"truncated", "shape [2, 3] of u8 needs 6 data bytes", "holds 5"});
  std::vector<uint8_t> long_data = idx_header(0x0D, {1});
  long_data.resize(long_data.size() + 5);
  expect_bad(long_data, {"bytes follow the 4 data bytes"});
  // A header claiming 2^32 x 2^32 x 4 bytes is refused before any
  // allocation; one within the limit but far beyond the file reads only
  // what is there.
  expect_bad(idx_header(0x0D, {0xffffffff, 0xffffffff, 4}),
             {"claims more than the limit of 1048576 bytes"});
  expect_bad(idx_header(0x08, {1024, 1024}), {"truncated", "holds 0"});
}

// Issue 16 (found by fuzz/idx): no data, but strides beyond int64 that
// used to overflow in contiguous_strides.
TEST_F(Idx, ZeroDimensionDoesNotHideOverflowingStrides) {
  expect_bad(idx_header(0x08, {0, 0xffffffff, 0xffffffff}),
             {"shape [0, 4294967295, 4294967295] is too large", "strides"});
  write_bytes(path, idx_header(0x08, {0, 0xffffffff, 0xffffffff}));
  EXPECT_THROW(read_idx(path), FormatError);  // The default limit too.
  // Strides that fit: an empty array that becomes an empty tensor.
  write_bytes(path, idx_header(0x0D, {0xffff, 0, 0xffffffff}));
  IdxArray a = read_idx(path);
  EXPECT_EQ(a.shape, (Shape{0xffff, 0, 0xffffffff}));
  Tensor t = to_tensor(a, default_backend());
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.shape(), a.shape);
}

TEST_F(Idx, EveryTruncationOfAValidFileIsAnError) {
  std::vector<uint8_t> good = idx_header(0x0C, {3, 2});
  for (int i = 0; i < 24; ++i) good.push_back(uint8_t(i));
  for (size_t n = 0; n < good.size(); ++n) {
    write_bytes(
        path, std::vector<uint8_t>(good.begin(), good.begin() + ptrdiff_t(n)));
    EXPECT_THROW(read_idx(path), FormatError) << "cut to " << n;
  }
  expect_error<Error>([&] { read_idx(dir.file("absent.idx")); },
                      {"absent.idx", "cannot open"});
}

}  // namespace
}  // namespace nascent::data
