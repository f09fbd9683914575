#include "nascent/io/npy.h"

#include <cstring>

#include <fmt/format.h>

#include "nascent/core/ops.h"
#include "nascent/io/file.h"

namespace nascent::npy {

namespace {

constexpr char kMagic[] = "\x93NUMPY";

[[noreturn]] void bad(const std::string& what, const std::string& msg) {
  throw FormatError(fmt::format("npy: {}: {}", what, msg));
}

// The value of 'key' in the header's Python dict literal, as text.
std::string field(const std::string& header, const std::string& key,
                  const std::string& what) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) bad(what, "the header has no '" + key + "'");
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) bad(what, "malformed header");
  size_t b = header.find_first_not_of(' ', colon + 1);
  if (b == std::string::npos) bad(what, "malformed header");
  size_t e;
  if (header[b] == '(') {
    e = header.find(')', b);
    if (e == std::string::npos) bad(what, "unterminated shape");
    return header.substr(b, e - b + 1);
  }
  if (header[b] == '\'') {
    e = header.find('\'', b + 1);
    if (e == std::string::npos) bad(what, "unterminated string");
    return header.substr(b + 1, e - b - 1);
  }
  e = header.find_first_of(",}", b);
  if (e == std::string::npos) bad(what, "malformed header");
  return header.substr(b, e - b);
}

DType dtype_of_descr(const std::string& d, const std::string& what) {
  if (d == "<f4") return DType::f32;
  if (d == "<f8") return DType::f64;
  if (d == "<f2") return DType::f16;
  if (d == "<i4") return DType::i32;
  if (d == "<i8") return DType::i64;
  if (d == "|u1" || d == "<u1") return DType::u8;
  if (d == "|b1") return DType::boolean;
  throw DTypeError(fmt::format(
      "npy: {}: dtype '{}' is not supported (f4, f8, f2, i4, i8, u1, b1, "
      "little-endian)",
      what, d));
}

const char* descr_of(DType d) {
  switch (d) {
    case DType::f32:
      return "<f4";
    case DType::f64:
      return "<f8";
    case DType::f16:
      return "<f2";
    case DType::i32:
      return "<i4";
    case DType::i64:
      return "<i8";
    case DType::u8:
      return "|u1";
    case DType::boolean:
      return "|b1";
    case DType::bf16:
      break;
  }
  return "<f4";
}

Shape parse_shape(const std::string& s, const std::string& what) {
  Shape shape;
  size_t i = 1;  // After '('.
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == ',')) ++i;
    if (i >= s.size() || s[i] == ')') break;
    size_t j = i;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    if (j == i || j - i > 15) bad(what, "bad shape " + s);
    shape.push_back(std::stoll(s.substr(i, j - i)));
    i = j;
  }
  if (shape.size() > 32) bad(what, "more than 32 dimensions");
  return shape;
}

}  // namespace

Tensor parse(std::span<const std::byte> bytes, const std::string& what,
             Backend& backend) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) {
    bad(what, "not a .npy file (no \\x93NUMPY magic)");
  }
  const auto* u = reinterpret_cast<const uint8_t*>(bytes.data());
  uint8_t major = u[6];
  size_t header_len, start;
  if (major == 1) {
    header_len = size_t(u[8]) | size_t(u[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) bad(what, "truncated header");
    header_len = size_t(u[8]) | size_t(u[9]) << 8 | size_t(u[10]) << 16 |
                 size_t(u[11]) << 24;
    start = 12;
  } else {
    bad(what, fmt::format("format version {} is not supported", major));
  }
  if (header_len > bytes.size() - start) bad(what, "header runs past the end");
  std::string header(reinterpret_cast<const char*>(bytes.data() + start),
                     header_len);
  DType dtype = dtype_of_descr(field(header, "descr", what), what);
  std::string order = field(header, "fortran_order", what);
  if (order != "False" && order != "True") bad(what, "bad fortran_order");
  Shape shape = parse_shape(field(header, "shape", what), what);
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d > 0 && numel > (int64_t(1) << 48) / d) bad(what, "shape too large");
    numel *= d;
  }
  size_t data_at = start + header_len;
  uint64_t nbytes = uint64_t(numel) * size_of(dtype);
  if (bytes.size() - data_at != nbytes) {
    bad(what, fmt::format("{} data bytes, shape {} of {} needs {}",
                          bytes.size() - data_at, to_string(shape), name(dtype),
                          nbytes));
  }
  const std::byte* data = bytes.data() + data_at;
  if (dtype == DType::boolean) {
    for (uint64_t i = 0; i < nbytes; ++i) {
      if (uint8_t(data[i]) > 1) bad(what, "a bool that is not 0 or 1");
    }
  }
  if (order == "True") {  // Column-major: the reversed shape, transposed.
    Shape rev(shape.rbegin(), shape.rend());
    Tensor t = from_data(data, rev, dtype, backend);
    std::vector<int64_t> perm;
    for (int64_t i = int64_t(shape.size()) - 1; i >= 0; --i) perm.push_back(i);
    return t.permute(perm).contiguous();
  }
  return from_data(data, shape, dtype, backend);
}

Tensor read(const std::string& path, Backend& backend) {
  auto file = io::MappedFile::open(path);
  return parse(file->bytes(), path, backend);
}

std::vector<std::byte> encode(const Tensor& t) {
  Tensor c = t.dtype() == DType::bf16 ? t.cast(DType::f32) : t;
  // Python's tuple: "()", "(3,)", "(2, 3)".
  std::string shape = fmt::format("{}", fmt::join(c.shape(), ", "));
  if (c.ndim() == 1) shape += ",";
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}",
                  descr_of(c.dtype()), shape);
  // Pad with spaces so the data starts on a 64-byte boundary, then '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::vector<std::byte> out(10 + header.size());
  std::memcpy(out.data(), kMagic, 6);
  out[6] = std::byte{1};
  out[7] = std::byte{0};
  out[8] = std::byte(header.size() & 0xff);
  out[9] = std::byte(header.size() >> 8);
  std::memcpy(out.data() + 10, header.data(), header.size());
  if (c.dtype() == DType::boolean) {
    auto b = c.to_vector<bool>();
    for (bool v : b) out.push_back(std::byte(v ? 1 : 0));
    return out;
  }
  size_t at = out.size();
  out.resize(at + size_t(c.numel()) * c.itemsize());
  switch (c.dtype()) {
    case DType::f32: {
      auto v = c.to_vector<float>();
      std::memcpy(out.data() + at, v.data(), v.size() * 4);
      break;
    }
    case DType::f64: {
      auto v = c.to_vector<double>();
      std::memcpy(out.data() + at, v.data(), v.size() * 8);
      break;
    }
    case DType::i32: {
      auto v = c.to_vector<int32_t>();
      std::memcpy(out.data() + at, v.data(), v.size() * 4);
      break;
    }
    case DType::i64: {
      auto v = c.to_vector<int64_t>();
      std::memcpy(out.data() + at, v.data(), v.size() * 8);
      break;
    }
    case DType::u8: {
      auto v = c.to_vector<uint8_t>();
      std::memcpy(out.data() + at, v.data(), v.size());
      break;
    }
    case DType::f16: {
      auto v = c.to_vector<float16>();
      std::memcpy(out.data() + at, v.data(), v.size() * 2);
      break;
    }
    default:
      break;
  }
  return out;
}

void write(const std::string& path, const Tensor& t) {
  std::vector<std::byte> bytes = encode(t);
  io::AtomicFileWriter w(path);
  w.write(bytes);
  w.commit();
}

}  // namespace nascent::npy
