#include "nascent/io/gguf_json.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace nascent::gguf {

using nlohmann::json;

namespace {

// JSON numbers for one scalar type, checked against the type's range.
template <class T>
json scalar_to_json(const T& v, const std::string& key) {
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(v)) {
      throw ValueError(fmt::format(
          "gguf::to_json: {} holds a non-finite float, which JSON cannot",
          key));
    }
  }
  return json(v);
}

template <class T>
T scalar_from_json(const json& v, const std::string& where) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) throw FormatError(where + ": not a string");
    return v.get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) throw FormatError(where + ": not a boolean");
    return v.get<bool>();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) throw FormatError(where + ": not a number");
    return T(v.get<double>());
  } else {
    const bool fits =
        v.is_number_unsigned()
            ? v.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max())
        : v.is_number_integer()
            ? v.get<int64_t>() >= int64_t(std::numeric_limits<T>::min()) &&
                  (v.get<int64_t>() < 0 ||
                   uint64_t(v.get<int64_t>()) <=
                       uint64_t(std::numeric_limits<T>::max()))
            : false;
    if (!fits) throw FormatError(where + ": not an integer of its type");
    return v.is_number_unsigned() ? T(v.get<uint64_t>()) : T(v.get<int64_t>());
  }
}

// Calls f(T{}) with the C++ type of a scalar ValueType.
template <class F>
void with_scalar_type(ValueType t, F&& f) {
  switch (t) {
    case ValueType::u8:
      return f(uint8_t{});
    case ValueType::i8:
      return f(int8_t{});
    case ValueType::u16:
      return f(uint16_t{});
    case ValueType::i16:
      return f(int16_t{});
    case ValueType::u32:
      return f(uint32_t{});
    case ValueType::i32:
      return f(int32_t{});
    case ValueType::f32:
      return f(float{});
    case ValueType::boolean:
      return f(bool{});
    case ValueType::string:
      return f(std::string{});
    case ValueType::u64:
      return f(uint64_t{});
    case ValueType::i64:
      return f(int64_t{});
    case ValueType::f64:
      return f(double{});
    case ValueType::array:
      break;
  }
  throw ValueError("gguf json: arrays of arrays are not supported");
}

std::string type_name(ValueType t) {
  return std::string(name(t));
}

ValueType parse_type(const std::string& s, const std::string& where) {
  for (uint32_t i = 0; i < kNumValueTypes; ++i) {
    if (ValueType(i) != ValueType::array && s == name(ValueType(i))) {
      return ValueType(i);
    }
  }
  throw FormatError(fmt::format("{}: unknown GGUF type \"{}\"", where, s));
}

}  // namespace

json to_json(const Metadata& metadata) {
  json out = json::array();
  for (const auto& entry : metadata.entries()) {
    // Named copies: clang 14 lambdas cannot capture structured bindings.
    const std::string& key = entry.first;
    const Value& value = entry.second;
    json typed;
    if (value.is_array()) {
      const ValueType et = value.element_type();
      json items = json::array();
      with_scalar_type(et, [&]<class T>(T) {
        for (const auto& v : value.array_of<T>()) {
          items.push_back(scalar_to_json(T(v), key));
        }
      });
      typed = {{"type", type_name(et) + "[]"}, {"value", std::move(items)}};
    } else {
      with_scalar_type(value.type(), [&]<class T>(T) {
        typed = {{"type", type_name(value.type())},
                 {"value", scalar_to_json(value.get<T>(), key)}};
      });
    }
    out.push_back(json::array({key, std::move(typed)}));
  }
  return out;
}

Metadata metadata_from_json(const json& j, const std::string& origin) {
  if (!j.is_array()) {
    throw FormatError(origin + ": GGUF metadata JSON is not an array");
  }
  Metadata m(origin);
  for (const json& entry : j) {
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() ||
        !entry[1].is_object() || !entry[1].contains("type") ||
        !entry[1]["type"].is_string() || !entry[1].contains("value")) {
      throw FormatError(origin +
                        ": a GGUF metadata entry is not [key, {type, value}]");
    }
    const std::string key = entry[0].get<std::string>();
    const std::string where = fmt::format("{}: {}", origin, key);
    std::string type = entry[1]["type"].get<std::string>();
    const json& v = entry[1]["value"];
    const bool array = type.size() > 2 && type.ends_with("[]");
    if (array) type.resize(type.size() - 2);
    with_scalar_type(parse_type(type, where), [&]<class T>(T) {
      if (!array) {
        m.set(key, Value(scalar_from_json<T>(v, where)));
        return;
      }
      if (!v.is_array()) throw FormatError(where + ": not an array");
      std::vector<T> items;
      items.reserve(v.size());
      for (const json& item : v)
        items.push_back(scalar_from_json<T>(item, where));
      m.set(key, Value::array(std::move(items)));
    });
  }
  return m;
}

}  // namespace nascent::gguf
