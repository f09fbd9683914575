#include "nascent/backends/webgpu/elementwise.h"

#include <cstring>

#include <fmt/format.h>

namespace nascent::webgpu {

uint32_t f32_word(double v) {
  const float f = float(v);
  uint32_t w;
  std::memcpy(&w, &f, 4);
  return w;
}

void elementwise(Context& ctx, const char* op, const std::string& key,
                 const std::string& helpers, const std::string& body,
                 std::span<const Tensor* const> inputs, Tensor& out,
                 std::span<const uint32_t> extra) {
  std::vector<const Tensor*> all = {&out};
  all.insert(all.end(), inputs.begin(), inputs.end());
  // The callers refuse the dtypes their op lacks; here only storage.
  for (const Tensor* t : all) check_dtype(ctx, op, *t, true, true);
  if (out.numel() == 0) return;
  std::vector<uint32_t> words = strided_params(out.shape(), all);
  const size_t extra_at = words.size();
  words.insert(words.end(), extra.begin(), extra.end());
  // A word that is 0 at run time, for math_wgsl()'s keep().
  const size_t zero_at = words.size();
  words.push_back(0);

  std::string full_key = key;
  for (const Tensor* t : all) full_key += std::string(":") + name(t->dtype());
  std::string src = prelude(kGroup);
  src += fmt::format(
      "const E: u32 = {}u;\n"
      "const Z: u32 = {}u;\n"
      "fn X(k: u32) -> f32 {{ return pf(E + k); }}\n"
      "fn XI(k: u32) -> i32 {{ return pi(E + k); }}\n"
      "fn XU(k: u32) -> u32 {{ return P[E + k]; }}\n",
      extra_at, zero_at);
  src += declare("O", 1, out.dtype(), true);
  static const char* kNames[] = {"A", "B", "C"};
  for (size_t k = 0; k < inputs.size(); ++k) {
    src += declare(kNames[k], int(k) + 2, inputs[k]->dtype(), false);
  }
  src += helpers;
  src +=
      "@compute @workgroup_size(WG)\n"
      "fn main(@builtin(global_invocation_id) g: vec3<u32>,\n"
      "        @builtin(num_workgroups) n: vec3<u32>) {\n"
      "  let i = g.x + g.y * n.x * WG;\n"
      "  if (i >= numel()) { return; }\n";
  static const char* kVars[] = {"a", "b", "c"};
  for (size_t k = 0; k < inputs.size(); ++k) {
    src += fmt::format("  let {} = load_{}(elem({}u, i));\n", kVars[k],
                       kNames[k], k + 1);
  }
  src += fmt::format("  store_O(elem(0u, i), {});\n}}\n", body);

  WGPUComputePipeline pipe = ctx.pipeline(full_key, src, op);
  std::vector<WGPUBuffer> buffers;
  for (const Tensor* t : all) buffers.push_back(buffer_of(*t));
  ctx.dispatch(op, pipe, words, buffers, groups_for(out.numel()));
}

}  // namespace nascent::webgpu
