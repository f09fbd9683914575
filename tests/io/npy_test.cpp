// .npy files: every dtype round-trips; the header is NumPy's (format 1.0,
// data 64-byte aligned); Fortran order is read; malformed files raise
// FormatError naming the fault and unsupported dtypes DTypeError.
#include <cstring>

#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"
#include "nascent/io/npy.h"
#include "tests/io/test_files.h"

namespace nascent {
namespace {

std::vector<std::byte> file_of(const std::string& header,
                               const std::vector<uint8_t>& data) {
  std::string h = header;
  std::vector<std::byte> out(10);
  std::memcpy(out.data(), "\x93NUMPY\x01\x00", 8);
  out[8] = std::byte(h.size() & 0xff);
  out[9] = std::byte(h.size() >> 8);
  for (char c : h) out.push_back(std::byte(c));
  for (uint8_t b : data) out.push_back(std::byte(b));
  return out;
}

TEST(Npy, EveryDtypeRoundTrips) {
  cpu::Backend cpu;
  Tensor base = arange(-3.0, 9.0, 1.0, cpu, DType::f64).reshape({3, 4});
  for (DType d : {DType::f32, DType::f64, DType::f16, DType::i32, DType::i64,
                  DType::u8, DType::boolean}) {
    Tensor t = (d == DType::u8 ? base + 3.0 : base).cast(d);
    std::vector<std::byte> bytes = npy::encode(t);
    EXPECT_EQ((bytes.size() - size_t(t.numel()) * t.itemsize()) % 64, 0u);
    Tensor back = npy::parse(bytes, "t.npy", cpu);
    EXPECT_EQ(back.dtype(), d);
    EXPECT_EQ(back.shape(), t.shape());
    EXPECT_EQ(back.to_vector<double>(), t.to_vector<double>()) << name(d);
  }
  for (Shape s : {Shape{}, Shape{0}, Shape{5}, Shape{2, 0, 3}}) {
    Tensor t = zeros(s, cpu);
    Tensor back = npy::parse(npy::encode(t), "t.npy", cpu);
    EXPECT_EQ(back.shape(), s);
  }
}

TEST(Npy, HeaderIsNumpys) {
  cpu::Backend cpu;
  auto header = [](const std::vector<std::byte>& b) {
    size_t len = size_t(b[8]) | size_t(b[9]) << 8;
    return std::string(reinterpret_cast<const char*>(b.data()) + 10, len);
  };
  // As NumPy 1.24's np.save writes them: the dict, spaces and a newline,
  // the data at a multiple of 64 (128 for a [2, 3] float32 array).
  auto starts = [](const std::string& h, const std::string& dict) {
    return h.compare(0, dict.size(), dict) == 0 &&
           h.find_first_not_of(' ', dict.size()) == h.size() - 1;
  };
  std::string h = header(npy::encode(zeros({2, 3}, cpu)));
  EXPECT_EQ(h.size() + 10, 128u);
  EXPECT_TRUE(
      starts(h, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"))
      << h;
  EXPECT_EQ(h.back(), '\n');
  h = header(npy::encode(zeros({7}, cpu, DType::i64)));
  EXPECT_TRUE(
      starts(h, "{'descr': '<i8', 'fortran_order': False, 'shape': (7,), }"))
      << h;
  h = header(npy::encode(zeros({}, cpu, DType::boolean)));
  EXPECT_TRUE(
      starts(h, "{'descr': '|b1', 'fortran_order': False, 'shape': (), }"))
      << h;
}

TEST(Npy, FileRoundTripAndFortranOrder) {
  cpu::Backend cpu;
  testing::TempDir dir;
  Tensor t = arange(0.0, 6.0, 1.0, cpu).reshape({2, 3});
  npy::write(dir.file("a.npy"), t);
  EXPECT_EQ(npy::read(dir.file("a.npy"), cpu).to_vector<float>(),
            t.to_vector<float>());
  // Column-major [2, 3]: 0 3 1 4 2 5 in memory.
  std::vector<uint8_t> data = {0, 3, 1, 4, 2, 5};
  auto f = file_of(
      "{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3), }\n", data);
  Tensor back = npy::parse(f, "f.npy", cpu);
  EXPECT_EQ(back.to_vector<int64_t>(),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(Npy, MalformedFilesAreRefused) {
  cpu::Backend cpu;
  const std::string h =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
  EXPECT_NO_THROW(npy::parse(file_of(h, std::vector<uint8_t>(8)), "ok", cpu));
  auto msg = [&](const std::vector<std::byte>& bytes) {
    try {
      npy::parse(bytes, "bad.npy", cpu);
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("no FormatError");
  };
  EXPECT_NE(msg(file_of(h, std::vector<uint8_t>(7))).find("7 data bytes"),
            std::string::npos);
  std::vector<std::byte> magic = file_of(h, std::vector<uint8_t>(8));
  magic[1] = std::byte('X');
  EXPECT_NE(msg(magic).find("magic"), std::string::npos);
  std::vector<std::byte> overrun = file_of(h, {});
  overrun[9] = std::byte(0x7f);
  EXPECT_NE(msg(overrun).find("past the end"), std::string::npos);
  EXPECT_NE(msg(file_of("{'descr': '<f4', 'shape': (2,), }", {}))
                .find("fortran_order"),
            std::string::npos);
  EXPECT_NE(
      msg(file_of("{'descr': '<f4', 'fortran_order': False, 'shape': (2,x), }",
                  {}))
          .find("bad shape"),
      std::string::npos);
  EXPECT_THROW(
      npy::parse(
          file_of("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
                  std::vector<uint8_t>(8)),
          "be.npy", cpu),
      DTypeError);
  EXPECT_NE(
      msg(file_of("{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }",
                  {2}))
          .find("bool"),
      std::string::npos);
}

}  // namespace
}  // namespace nascent
