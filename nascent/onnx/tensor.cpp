// ONNX tensors to nascent tensors: dtypes, the typed value fields, raw
// bytes and external data files.
#include <filesystem>

#include <fmt/format.h>

#include "nascent/core/ops.h"
#include "nascent/io/file.h"
#include "nascent/onnx/model.h"

namespace nascent::onnx {

DType to_dtype(int32_t elem_type, const std::string& where) {
  switch (ElemType(elem_type)) {
    case ElemType::f32:
      return DType::f32;
    case ElemType::f64:
      return DType::f64;
    case ElemType::f16:
      return DType::f16;
    case ElemType::bf16:
      return DType::bf16;
    case ElemType::i32:
      return DType::i32;
    case ElemType::i64:
      return DType::i64;
    case ElemType::u8:
      return DType::u8;
    case ElemType::boolean:
      return DType::boolean;
    default:
      break;
  }
  throw UnsupportedError(
      fmt::format("onnx: {}: element type {} is not supported", where,
                  elem_type_name(elem_type)));
}

int32_t to_elem_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return int32_t(ElemType::f32);
    case DType::f64:
      return int32_t(ElemType::f64);
    case DType::f16:
      return int32_t(ElemType::f16);
    case DType::bf16:
      return int32_t(ElemType::bf16);
    case DType::i32:
      return int32_t(ElemType::i32);
    case DType::i64:
      return int32_t(ElemType::i64);
    case DType::u8:
      return int32_t(ElemType::u8);
    case DType::boolean:
      return int32_t(ElemType::boolean);
  }
  return 0;
}

namespace {

// The bytes of an external tensor: `location` is a relative path that must
// stay inside base_dir (no absolute paths, no "..", no symbolic link out).
std::vector<std::byte> read_external(const TensorProto& t,
                                     const std::string& base_dir,
                                     const std::string& where,
                                     uint64_t expected) {
  std::string location;
  uint64_t offset = 0, length = expected;
  bool has_length = false;
  auto number = [&](const std::string& key, const std::string& v) {
    if (v.empty() || v.size() > 19 ||
        v.find_first_not_of("0123456789") != std::string::npos) {
      throw FormatError(fmt::format(
          "onnx: {}: external_data '{}' is not a number: '{}'", where, key, v));
    }
    return uint64_t(std::stoull(v));
  };
  for (const auto& [key, value] : t.external_data) {
    if (key == "location")
      location = value;
    else if (key == "offset")
      offset = number(key, value);
    else if (key == "length")
      length = number(key, value), has_length = true;
  }
  if (base_dir.empty()) {
    throw FormatError(fmt::format(
        "onnx: {}: external data is not allowed for a model read from memory",
        where));
  }
  namespace fs = std::filesystem;
  fs::path rel(location);
  bool bad = location.empty() || rel.is_absolute() || rel.has_root_name();
  for (const auto& part : rel) bad = bad || part == "..";
  if (bad) {
    throw FormatError(fmt::format(
        "onnx: {}: external_data location '{}' must be a relative path "
        "inside the model's folder",
        where, location));
  }
  std::error_code ec;
  fs::path base = fs::canonical(base_dir, ec);
  fs::path file = ec ? fs::path() : fs::canonical(base / rel, ec);
  if (ec) {
    throw IoError(fmt::format("onnx: {}: external data file '{}': {}", where,
                              location, ec.message()));
  }
  auto [b, f] =
      std::mismatch(base.begin(), base.end(), file.begin(), file.end());
  if (b != base.end()) {
    throw FormatError(fmt::format(
        "onnx: {}: external_data location '{}' leaves the model's folder",
        where, location));
  }
  if (has_length && length != expected) {
    throw FormatError(fmt::format(
        "onnx: {}: external_data length {} does not match the {} bytes of "
        "its shape and type",
        where, length, expected));
  }
  io::InputFile in(file.string());
  if (offset > in.size() || expected > in.size() - offset) {
    throw FormatError(fmt::format(
        "onnx: {}: external data [{}, {}) lies outside '{}' ({} bytes)", where,
        offset, offset + expected, location, in.size()));
  }
  std::vector<std::byte> out(expected);
  in.read_at(offset, out.data(), out.size(), "external tensor data");
  return out;
}

template <class To, class From>
std::vector<std::byte> convert(const std::vector<From>& v) {
  std::vector<std::byte> out(v.size() * sizeof(To));
  for (size_t i = 0; i < v.size(); ++i) {
    To x = To(v[i]);
    std::memcpy(out.data() + i * sizeof(To), &x, sizeof(To));
  }
  return out;
}

}  // namespace

Tensor to_tensor(const TensorProto& t, Backend& backend,
                 const std::string& base_dir, const std::string& where) {
  if (t.has_segment) {
    throw UnsupportedError(
        fmt::format("onnx: {}: segmented tensors are not "
                    "supported",
                    where));
  }
  DType dtype = to_dtype(t.data_type, where);
  Shape shape;
  int64_t numel = 1;
  for (int64_t d : t.dims) {
    if (d < 0) {
      throw FormatError(fmt::format("onnx: {}: negative dimension {} in {}",
                                    where, d, fmt::join(t.dims, ", ")));
    }
    if (d > 0 && numel > (int64_t(1) << 48) / d) {
      throw FormatError(fmt::format("onnx: {}: dims [{}] are too large", where,
                                    fmt::join(t.dims, ", ")));
    }
    numel *= d;
    shape.push_back(d);
  }
  const uint64_t nbytes = uint64_t(numel) * size_of(dtype);
  std::vector<std::byte> owned;
  std::span<const std::byte> bytes;
  auto count_check = [&](size_t n, const char* field) {
    if (int64_t(n) != numel) {
      throw FormatError(
          fmt::format("onnx: {}: {} holds {} values, its dims [{}] need {}",
                      where, field, n, fmt::join(t.dims, ", "), numel));
    }
  };
  if (t.data_location == 1) {
    owned = read_external(t, base_dir, where, nbytes);
    bytes = owned;
  } else if (t.has_raw_data) {
    if (t.raw_data.size() != nbytes) {
      throw FormatError(fmt::format(
          "onnx: {}: raw_data has {} bytes, its dims [{}] of {} need {}", where,
          t.raw_data.size(), fmt::join(t.dims, ", "), name(dtype), nbytes));
    }
    bytes = t.raw_data;
  } else {
    switch (dtype) {
      case DType::f32:
        count_check(t.float_data.size(), "float_data");
        owned = convert<float>(t.float_data);
        break;
      case DType::f64:
        count_check(t.double_data.size(), "double_data");
        owned = convert<double>(t.double_data);
        break;
      case DType::i64:
        count_check(t.int64_data.size(), "int64_data");
        owned = convert<int64_t>(t.int64_data);
        break;
      case DType::i32:
        count_check(t.int32_data.size(), "int32_data");
        owned = convert<int32_t>(t.int32_data);
        break;
      case DType::f16:
      case DType::bf16:  // The 16 bits sit in the low half of each int32.
        count_check(t.int32_data.size(), "int32_data");
        owned = convert<uint16_t>(t.int32_data);
        break;
      case DType::u8:
        count_check(t.int32_data.size(), "int32_data");
        owned = convert<uint8_t>(t.int32_data);
        break;
      case DType::boolean: {
        count_check(t.int32_data.size(), "int32_data");
        std::vector<uint8_t> b(t.int32_data.size());
        for (size_t i = 0; i < b.size(); ++i) b[i] = t.int32_data[i] != 0;
        owned = convert<uint8_t>(b);
        break;
      }
    }
    bytes = owned;
  }
  if (dtype == DType::boolean) {  // Only 0 and 1 are bools.
    for (std::byte b : bytes) {
      if (uint8_t(b) > 1) {
        throw FormatError(fmt::format("onnx: {}: bool value {} is not 0 or 1",
                                      where, uint8_t(b)));
      }
    }
  }
  return from_data(bytes.data(), shape, dtype, backend);
}

}  // namespace nascent::onnx
