#include "nascent/core/quant.h"

#include <array>
#include <cctype>
#include <limits>

#include <fmt/format.h>

#include "nascent/core/backend.h"
#include "nascent/core/error.h"

namespace nascent {

namespace {

// In QuantType order. ids: ggml.h's enum ggml_type.
constexpr std::array<QuantTypeInfo, kNumQuantTypes> kInfo = {{
    {QuantType::f32, "f32", 0, 1, 4},
    {QuantType::f16, "f16", 1, 1, 2},
    {QuantType::bf16, "bf16", 30, 1, 2},
    {QuantType::q4_0, "q4_0", 2, 32, 18},
    {QuantType::q4_1, "q4_1", 3, 32, 20},
    {QuantType::q5_0, "q5_0", 6, 32, 22},
    {QuantType::q5_1, "q5_1", 7, 32, 24},
    {QuantType::q8_0, "q8_0", 8, 32, 34},
    {QuantType::q2_k, "q2_K", 10, 256, 84},
    {QuantType::q3_k, "q3_K", 11, 256, 110},
    {QuantType::q4_k, "q4_K", 12, 256, 144},
    {QuantType::q5_k, "q5_K", 13, 256, 176},
    {QuantType::q6_k, "q6_K", 14, 256, 210},
    {QuantType::q8_k, "q8_K", 15, 256, 292},
}};

}  // namespace

const QuantTypeInfo& info(QuantType type) {
  return kInfo[size_t(type)];
}

std::optional<QuantType> quant_type_from_ggml(uint32_t id) {
  for (const QuantTypeInfo& i : kInfo) {
    if (i.ggml_type == id) return i.type;
  }
  return std::nullopt;
}

std::optional<QuantType> quant_type_from_name(std::string_view name) {
  for (const QuantTypeInfo& i : kInfo) {
    const std::string_view n = i.name;
    if (n.size() != name.size()) continue;
    bool same = true;
    for (size_t c = 0; c < n.size() && same; ++c) {
      same = std::tolower(static_cast<unsigned char>(n[c])) ==
             std::tolower(static_cast<unsigned char>(name[c]));
    }
    if (same) return i.type;
  }
  return std::nullopt;
}

void check_whole_blocks(const char* op, QuantType type, int64_t n) {
  const int64_t bs = block_size(type);
  if (n < 0 || n % bs != 0) {
    throw ShapeError(
        fmt::format("{}: a {} row holds a multiple of {} values, got {}", op,
                    name(type), bs, n));
  }
}

size_t row_bytes(QuantType type, int64_t n) {
  check_whole_blocks("row_bytes", type, n);
  const int64_t blocks = n / block_size(type);
  if (blocks > std::numeric_limits<int64_t>::max() / block_bytes(type)) {
    throw ValueError(
        fmt::format("row_bytes: a {} row of {} values overflows a byte count",
                    name(type), n));
  }
  return size_t(blocks * block_bytes(type));
}

}  // namespace nascent
