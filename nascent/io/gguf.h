// The GGUF data model shared by the reader and the writer: typed metadata
// values (scalars, strings, arrays, arrays of arrays), the ordered key-value
// table, and tensor descriptions.
//
// Format reference: ggml's docs/gguf.md. A file is: magic "GGUF", version,
// tensor and key-value counts, the key-values, the tensor infos, padding to
// the alignment, then the tensor data. Everything is little-endian.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "nascent/core/error.h"
#include "nascent/io/gguf_types.h"

namespace nascent::gguf {

// GGUF's value type ids.
enum class ValueType : uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};
inline constexpr uint32_t kNumValueTypes = 13;
std::string_view name(ValueType type);

inline constexpr uint32_t kDefaultAlignment = 32;
// ggml's GGML_MAX_DIMS: tensors have at most four dimensions.
inline constexpr int kMaxDims = 4;

class Value;
struct Array;

namespace detail {
// The C++ type of each scalar value type, in ValueType order.
template <class T>
inline constexpr int scalar_index = -1;
template <>
inline constexpr int scalar_index<uint8_t> = 0;
template <>
inline constexpr int scalar_index<int8_t> = 1;
template <>
inline constexpr int scalar_index<uint16_t> = 2;
template <>
inline constexpr int scalar_index<int16_t> = 3;
template <>
inline constexpr int scalar_index<uint32_t> = 4;
template <>
inline constexpr int scalar_index<int32_t> = 5;
template <>
inline constexpr int scalar_index<float> = 6;
template <>
inline constexpr int scalar_index<bool> = 7;
template <>
inline constexpr int scalar_index<std::string> = 8;
template <>
inline constexpr int scalar_index<uint64_t> = 10;
template <>
inline constexpr int scalar_index<int64_t> = 11;
template <>
inline constexpr int scalar_index<double> = 12;
}  // namespace detail

// An array's elements, one vector per element type; the alternative's index
// is the element's ValueType (index 9 holds arrays of arrays).
using ArrayItems = std::variant<
    std::vector<uint8_t>, std::vector<int8_t>, std::vector<uint16_t>,
    std::vector<int16_t>, std::vector<uint32_t>, std::vector<int32_t>,
    std::vector<float>, std::vector<bool>, std::vector<std::string>,
    std::vector<Value>, std::vector<uint64_t>, std::vector<int64_t>,
    std::vector<double>>;

// One metadata value. Immutable once built; copies share arrays.
class Value {
 public:
  // Scalars: the C++ type picks the GGUF type (uint32_t is u32, and so on).
  // Other integer types (size_t, long long on some targets) do not convert
  // silently: cast to the fixed-width type the file should hold.
  template <class T, std::enable_if_t<(detail::scalar_index<T> >= 0 &&
                                       detail::scalar_index<T> != 8),
                                      int> = 0>
  explicit Value(T v)
      : data_(std::in_place_index<detail::scalar_index<T>>, v) {}
  explicit Value(std::string s) : data_(std::in_place_index<8>, std::move(s)) {}
  explicit Value(std::string_view s) : Value(std::string(s)) {}
  explicit Value(const char* s) : Value(std::string(s)) {}
  // An array; an array of arrays is a std::vector<Value> of arrays.
  explicit Value(ArrayItems items);
  template <class T>
  static Value array(std::vector<T> items) {
    return Value(ArrayItems(std::move(items)));
  }

  ValueType type() const { return ValueType(data_.index()); }
  bool is_array() const { return type() == ValueType::array; }
  bool is_integer() const;
  bool is_float() const;

  // The value as exactly this type; ValueError naming both types otherwise.
  template <class T>
  const T& get() const;
  const std::string& as_string() const { return get<std::string>(); }
  // Any integer type, or a bool, as int64; ValueError when it does not fit.
  int64_t as_int() const;
  // Any number as double.
  double as_double() const;

  // Arrays.
  const Array& as_array() const;
  ValueType element_type() const;
  size_t array_size() const;
  // The elements when they have exactly type T.
  template <class T>
  const std::vector<T>& array_of() const;

  // Short human-readable form; long arrays and strings are elided.
  std::string to_string(size_t max_items = 8) const;

  // Bitwise for floats, so NaN payloads compare equal to themselves.
  friend bool operator==(const Value& a, const Value& b);
  friend bool operator!=(const Value& a, const Value& b) { return !(a == b); }

 private:
  using Storage =
      std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float,
                   bool, std::string, std::shared_ptr<const Array>, uint64_t,
                   int64_t, double>;
  [[noreturn]] void type_error(ValueType wanted) const;
  Storage data_;
};

struct Array {
  ArrayItems items;
  ValueType element_type() const { return ValueType(items.index()); }
  size_t size() const;
};

[[noreturn]] void throw_element_type_error(ValueType found, ValueType wanted);

template <class T>
const T& Value::get() const {
  constexpr int index = detail::scalar_index<T>;
  static_assert(index >= 0, "not a GGUF scalar type");
  if (data_.index() != size_t(index)) type_error(ValueType(index));
  return std::get<index>(data_);
}

template <class T>
const std::vector<T>& Value::array_of() const {
  const Array& a = as_array();
  constexpr int index = std::is_same_v<T, Value> ? 9 : detail::scalar_index<T>;
  static_assert(index >= 0, "not a GGUF element type");
  if (a.items.index() != size_t(index)) {
    throw_element_type_error(element_type(), ValueType(index));
  }
  return std::get<index>(a.items);
}

// The key-value table, in file order, with look-up by key. `origin` (a file
// name) prefixes the errors of the typed getters, which are FormatErrors:
// a missing or mistyped key is a fault of the file.
class Metadata {
 public:
  Metadata() = default;
  explicit Metadata(std::string origin) : origin_(std::move(origin)) {}

  const std::string& origin() const { return origin_; }
  void set_origin(std::string origin) { origin_ = std::move(origin); }

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const std::vector<std::pair<std::string, Value>>& entries() const {
    return entries_;
  }
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  const Value* find(std::string_view key) const;
  // Sets a key, keeping its position if it exists, appending otherwise.
  void set(std::string key, Value value);
  bool erase(std::string_view key);

  const Value& at(std::string_view key) const;
  const std::string& get_string(std::string_view key) const;
  int64_t get_int(std::string_view key) const;
  double get_double(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  template <class T>
  const std::vector<T>& get_array(std::string_view key) const;

  // Same, for optional keys: nothing when absent, an error when mistyped.
  std::optional<std::string> find_string(std::string_view key) const;
  std::optional<int64_t> find_int(std::string_view key) const;
  std::optional<double> find_double(std::string_view key) const;
  std::optional<bool> find_bool(std::string_view key) const;

  friend bool operator==(const Metadata& a, const Metadata& b) {
    return a.entries_ == b.entries_;
  }

 private:
  [[noreturn]] void rethrow(std::string_view key) const;

  std::string origin_;
  std::vector<std::pair<std::string, Value>> entries_;
  std::unordered_map<std::string, size_t> index_;
};

template <class T>
const std::vector<T>& Metadata::get_array(std::string_view key) const {
  const Value& v = at(key);
  try {
    return v.array_of<T>();
  } catch (const Error&) {
    rethrow(key);
  }
}

// One tensor of a file. `shape` is row-major like every nascent Tensor
// (shape.back() varies fastest); the file stores the dimensions the other
// way round (ggml's ne[0] is shape.back()). Blocks of quantized types run
// along the last axis.
struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;
  TensorType type = TensorType::f32;
  uint64_t offset = 0;  // From the start of the data section.
  uint64_t size = 0;    // Bytes.

  int64_t numel() const;
  friend bool operator==(const TensorInfo&, const TensorInfo&) = default;
};

// Bytes of a tensor of this type and shape; ValueError (naming `what`) for a
// shape that is not positive, whose last axis is not whole blocks, or whose
// size overflows.
uint64_t tensor_bytes(TensorType type, const std::vector<int64_t>& shape,
                      std::string_view what);

}  // namespace nascent::gguf
