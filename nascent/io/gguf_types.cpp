#include "nascent/io/gguf_types.h"

#include <array>

#include <fmt/format.h>

#include "nascent/core/error.h"

namespace nascent::gguf {
namespace {

using T = TensorType;
// Sizes from ggml's block structs (ggml-common.h): for example Q4_K is
// d, dmin (2 + 2 bytes), 12 bytes of scales and 128 of 4-bit values.
constexpr std::array<TensorTypeTraits, 32> kTypes = {{
    {T::f32, "F32", 1, 4},
    {T::f16, "F16", 1, 2},
    {T::q4_0, "Q4_0", 32, 18},
    {T::q4_1, "Q4_1", 32, 20},
    {T::q5_0, "Q5_0", 32, 22},
    {T::q5_1, "Q5_1", 32, 24},
    {T::q8_0, "Q8_0", 32, 34},
    {T::q8_1, "Q8_1", 32, 36},
    {T::q2_k, "Q2_K", 256, 84},
    {T::q3_k, "Q3_K", 256, 110},
    {T::q4_k, "Q4_K", 256, 144},
    {T::q5_k, "Q5_K", 256, 176},
    {T::q6_k, "Q6_K", 256, 210},
    {T::q8_k, "Q8_K", 256, 292},
    {T::iq2_xxs, "IQ2_XXS", 256, 66},
    {T::iq2_xs, "IQ2_XS", 256, 74},
    {T::iq3_xxs, "IQ3_XXS", 256, 98},
    {T::iq1_s, "IQ1_S", 256, 50},
    {T::iq4_nl, "IQ4_NL", 32, 18},
    {T::iq3_s, "IQ3_S", 256, 110},
    {T::iq2_s, "IQ2_S", 256, 82},
    {T::iq4_xs, "IQ4_XS", 256, 136},
    {T::i8, "I8", 1, 1},
    {T::i16, "I16", 1, 2},
    {T::i32, "I32", 1, 4},
    {T::i64, "I64", 1, 8},
    {T::f64, "F64", 1, 8},
    {T::iq1_m, "IQ1_M", 256, 56},
    {T::bf16, "BF16", 1, 2},
    {T::tq1_0, "TQ1_0", 256, 54},
    {T::tq2_0, "TQ2_0", 256, 66},
    {T::mxfp4, "MXFP4", 32, 17},
}};

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c;
}

}  // namespace

const TensorTypeTraits* find_tensor_type(uint32_t id) {
  for (const auto& t : kTypes) {
    if (uint32_t(t.type) == id) return &t;
  }
  return nullptr;
}

std::optional<TensorType> tensor_type_from_name(std::string_view name) {
  for (const auto& t : kTypes) {
    if (t.name.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size(); ++i) {
      same = same && lower(t.name[i]) == lower(name[i]);
    }
    if (same) return t.type;
  }
  return std::nullopt;
}

const TensorTypeTraits& traits(TensorType type) {
  const TensorTypeTraits* t = find_tensor_type(uint32_t(type));
  if (!t) {
    throw ValueError(
        fmt::format("gguf: unknown tensor type id {}", uint32_t(type)));
  }
  return *t;
}

}  // namespace nascent::gguf
