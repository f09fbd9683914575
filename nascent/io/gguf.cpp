#include "nascent/io/gguf.h"

#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace nascent::gguf {
namespace {

template <class F>
bool same_bits(F a, F b) {
  return std::memcmp(&a, &b, sizeof(F)) == 0;
}

std::string quoted(const std::string& s, size_t max_chars) {
  std::string out = "\"";
  size_t n = 0;
  for (char c : s) {
    if (n++ == max_chars) {
      out += "...";
      break;
    }
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

template <class T>
std::string scalar_string(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return quoted(v, 120);
  } else if constexpr (std::is_floating_point_v<T>) {
    return fmt::format("{}", v);
  } else {
    return fmt::format("{}", v);
  }
}

}  // namespace

std::string_view name(ValueType type) {
  static constexpr std::string_view kNames[kNumValueTypes] = {
      "u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
      "bool", "string", "array", "u64", "i64", "f64"};
  uint32_t i = uint32_t(type);
  return i < kNumValueTypes ? kNames[i] : std::string_view("invalid");
}

Value::Value(ArrayItems items)
    : data_(std::in_place_index<9>,
            std::make_shared<const Array>(Array{std::move(items)})) {}

size_t Array::size() const {
  return std::visit([](const auto& v) { return v.size(); }, items);
}

bool Value::is_integer() const {
  switch (type()) {
    case ValueType::u8:
    case ValueType::i8:
    case ValueType::u16:
    case ValueType::i16:
    case ValueType::u32:
    case ValueType::i32:
    case ValueType::u64:
    case ValueType::i64:
      return true;
    default:
      return false;
  }
}

bool Value::is_float() const {
  return type() == ValueType::f32 || type() == ValueType::f64;
}

void Value::type_error(ValueType wanted) const {
  throw ValueError(fmt::format("gguf value: expected {}, found {}",
                               name(wanted), name(type())));
}

void throw_element_type_error(ValueType found, ValueType wanted) {
  throw ValueError(
      fmt::format("gguf value: expected an array of {}, found "
                  "an array of {}",
                  name(wanted), name(found)));
}

int64_t Value::as_int() const {
  return std::visit(
      [this](const auto& v) -> int64_t {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, uint64_t>) {
          if (v > uint64_t(std::numeric_limits<int64_t>::max())) {
            throw ValueError(
                fmt::format("gguf value: {} does not fit in int64", v));
          }
          return int64_t(v);
        } else if constexpr (std::is_integral_v<T>) {
          return int64_t(v);
        } else {
          type_error(ValueType::i64);
        }
      },
      data_);
}

double Value::as_double() const {
  return std::visit(
      [this](const auto& v) -> double {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
          return double(v);
        } else {
          type_error(ValueType::f64);
        }
      },
      data_);
}

const Array& Value::as_array() const {
  if (type() != ValueType::array) type_error(ValueType::array);
  return *std::get<9>(data_);
}

ValueType Value::element_type() const {
  return as_array().element_type();
}
size_t Value::array_size() const {
  return as_array().size();
}

std::string Value::to_string(size_t max_items) const {
  if (!is_array()) {
    return std::visit(
        [](const auto& v) -> std::string {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::shared_ptr<const Array>>) {
            return "";
          } else {
            return scalar_string(v);
          }
        },
        data_);
  }
  const Array& a = as_array();
  std::string out = "[";
  std::visit(
      [&](const auto& items) {
        for (size_t i = 0; i < items.size(); ++i) {
          if (i == max_items) {
            out += fmt::format(", ... ({} more)", items.size() - i);
            break;
          }
          if (i) out += ", ";
          using E = typename std::decay_t<decltype(items)>::value_type;
          if constexpr (std::is_same_v<E, Value>) {
            out += items[i].to_string(max_items);
          } else if constexpr (std::is_same_v<E, bool>) {
            out += items[i] ? "true" : "false";
          } else if constexpr (std::is_same_v<E, std::string>) {
            out += quoted(items[i], 40);
          } else {
            out += fmt::format("{}", items[i]);
          }
        }
      },
      a.items);
  return out + "]";
}

bool operator==(const Value& a, const Value& b) {
  if (a.data_.index() != b.data_.index()) return false;
  switch (a.type()) {
    case ValueType::f32:
      return same_bits(std::get<6>(a.data_), std::get<6>(b.data_));
    case ValueType::f64:
      return same_bits(std::get<12>(a.data_), std::get<12>(b.data_));
    case ValueType::array: {
      const Array& x = a.as_array();
      const Array& y = b.as_array();
      if (x.items.index() != y.items.index()) return false;
      if (const auto* xf = std::get_if<std::vector<float>>(&x.items)) {
        const auto& yf = std::get<std::vector<float>>(y.items);
        return xf->size() == yf.size() &&
               (xf->empty() ||
                std::memcmp(xf->data(), yf.data(), 4 * xf->size()) == 0);
      }
      if (const auto* xd = std::get_if<std::vector<double>>(&x.items)) {
        const auto& yd = std::get<std::vector<double>>(y.items);
        return xd->size() == yd.size() &&
               (xd->empty() ||
                std::memcmp(xd->data(), yd.data(), 8 * xd->size()) == 0);
      }
      return x.items == y.items;
    }
    default:
      return a.data_ == b.data_;
  }
}

const Value* Metadata::find(std::string_view key) const {
  auto it = index_.find(std::string(key));
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

void Metadata::set(std::string key, Value value) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    entries_[it->second].second = std::move(value);
    return;
  }
  index_.emplace(key, entries_.size());
  entries_.emplace_back(std::move(key), std::move(value));
}

bool Metadata::erase(std::string_view key) {
  auto it = index_.find(std::string(key));
  if (it == index_.end()) return false;
  entries_.erase(entries_.begin() + std::ptrdiff_t(it->second));
  index_.clear();
  for (size_t i = 0; i < entries_.size(); ++i) index_[entries_[i].first] = i;
  return true;
}

const Value& Metadata::at(std::string_view key) const {
  const Value* v = find(key);
  if (!v) {
    throw FormatError(fmt::format("{}: metadata key '{}' is missing",
                                  origin_.empty() ? "gguf" : origin_, key));
  }
  return *v;
}

void Metadata::rethrow(std::string_view key) const {
  try {
    throw;
  } catch (const Error& e) {
    throw FormatError(fmt::format("{}: metadata key '{}': {}",
                                  origin_.empty() ? "gguf" : origin_, key,
                                  e.what()));
  }
}

const std::string& Metadata::get_string(std::string_view key) const {
  const Value& v = at(key);
  try {
    return v.as_string();
  } catch (const Error&) {
    rethrow(key);
  }
}

int64_t Metadata::get_int(std::string_view key) const {
  const Value& v = at(key);
  try {
    return v.as_int();
  } catch (const Error&) {
    rethrow(key);
  }
}

double Metadata::get_double(std::string_view key) const {
  const Value& v = at(key);
  try {
    return v.as_double();
  } catch (const Error&) {
    rethrow(key);
  }
}

bool Metadata::get_bool(std::string_view key) const {
  const Value& v = at(key);
  try {
    return v.get<bool>();
  } catch (const Error&) {
    rethrow(key);
  }
}

std::optional<std::string> Metadata::find_string(std::string_view key) const {
  if (!contains(key)) return std::nullopt;
  return get_string(key);
}
std::optional<int64_t> Metadata::find_int(std::string_view key) const {
  if (!contains(key)) return std::nullopt;
  return get_int(key);
}
std::optional<double> Metadata::find_double(std::string_view key) const {
  if (!contains(key)) return std::nullopt;
  return get_double(key);
}
std::optional<bool> Metadata::find_bool(std::string_view key) const {
  if (!contains(key)) return std::nullopt;
  return get_bool(key);
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

uint64_t tensor_bytes(TensorType type, const std::vector<int64_t>& shape,
                      std::string_view what) {
  const TensorTypeTraits* t = find_tensor_type(uint32_t(type));
  if (!t) {
    throw ValueError(
        fmt::format("{}: unknown tensor type id {}", what, uint32_t(type)));
  }
  if (shape.size() > size_t(kMaxDims)) {
    throw ValueError(fmt::format("{}: {} dimensions, at most {} allowed", what,
                                 shape.size(), kMaxDims));
  }
  constexpr uint64_t kMax = uint64_t(std::numeric_limits<int64_t>::max());
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0) {
      throw ValueError(
          fmt::format("{}: dimension {} is not positive", what, d));
    }
    if (uint64_t(d) > kMax / n) {
      throw ValueError(fmt::format("{}: element count overflows int64", what));
    }
    n *= uint64_t(d);
  }
  int64_t last = shape.empty() ? 1 : shape.back();
  if (uint64_t(last) % t->block_size != 0) {
    throw ValueError(fmt::format(
        "{}: last dimension {} is not a multiple of {}'s block size {}", what,
        last, t->name, t->block_size));
  }
  uint64_t blocks = n / t->block_size;
  if (blocks > kMax / t->type_size) {
    throw ValueError(fmt::format("{}: byte size overflows int64", what));
  }
  return blocks * t->type_size;
}

}  // namespace nascent::gguf
