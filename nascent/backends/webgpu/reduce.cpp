// Reductions: one workgroup of 64 threads per output element. Each thread
// walks a strided share of the reduced elements (Kahan-compensated sums),
// then the workgroup combines the 64 partials as a tree; strided and
// broadcast inputs are read in place.
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "nascent/backends/webgpu/elementwise.h"

namespace nascent::webgpu {

namespace {

constexpr int kReduceGroup = 64;
// Values one workgroup reads: chunks of sums, the longest group of the
// others (see reduce()).
constexpr int64_t kChunk = int64_t(1) << 16;
constexpr int64_t kLongest = int64_t(1) << 20;

uint32_t f32_bits(float f) {
  uint32_t w;
  std::memcpy(&w, &f, 4);
  return w;
}

// A compensated sum of f(r) over this thread's share, into sv[t], then the
// tree: leaves the total in sv[0] (after a barrier).
std::string sum_of(const std::string& f) {
  return fmt::format(R"(
  {{
    var s = 0.0;
    var c = 0.0;
    for (var r = r0 + t; r < R; r = r + WG) {{
      let y = ({}) - c;
      let q = s + y;
      c = select(0.0, (q - s) - y, finite(q));
      s = q;
    }}
    sf[t] = s;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k = k >> 1u) {{
      if (t < k) {{ sf[t] = sf[t] + sf[t + k]; }}
      workgroupBarrier();
    }}
  }}
)",
                     f);
}

// max or min (NaN wins) of x into sv[0], as the compute type V.
std::string extreme_of(bool max, DType dt) {
  const bool f = dt == DType::f32;
  const char* cmp = max ? ">" : "<";
  const std::string init =
      f ? (max ? "bitcast<f32>(0xff800000u)" : "bitcast<f32>(0x7f800000u)")
      : dt == DType::i32 ? (max ? "i32(-2147483647 - 1)" : "2147483647")
                         : (max ? "0u" : "0xffffffffu");
  const std::string pick =
      f ? fmt::format(
              "select(select(a, b, b {} a), a, is_nan(a)) ; if (is_nan(b)) "
              "{{ m = b; }}",
              cmp)
        : fmt::format("select(a, b, b {} a)", cmp);
  return fmt::format(R"(
  {{
    var m: V = {0};
    for (var r = r0 + t; r < R; r = r + WG) {{
      let a = m;
      let b = xat(base, r);
      m = {1};
    }}
    sv[t] = m;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k = k >> 1u) {{
      if (t < k) {{
        let a = sv[t];
        let b = sv[t + k];
        var m = {1};
        sv[t] = m;
      }}
      workgroupBarrier();
    }}
  }}
)",
                     init, pick);
}

}  // namespace

namespace {
void run_reduce(Context& ctx, ReduceOp op, const Tensor& x,
                const std::vector<uint32_t>& words, Tensor& out,
                int64_t groups);
}  // namespace

void Backend::reduce(ReduceOp op, const Tensor& x, const std::vector<int>& axes,
                     const ReduceParams& p, Tensor& out) {
  Context& ctx = *ctx_;
  const char* op_name = nascent::name(op);
  const bool arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
  // Integer sums give i64, summed in two words.
  const bool int_sum = op == ReduceOp::sum && out.dtype() == DType::i64;
  check_dtype(ctx, op_name, x, int_sum);
  check_dtype(ctx, op_name, out, arg || int_sum);
  if (out.numel() == 0) return;
  const DType dt = x.dtype();
  if (x.numel() == 0) {
    // Empty groups: the op's identity (the front-end refuses max, min and
    // the arg ops on them).
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double v = op == ReduceOp::prod                          ? 1.0
                     : op == ReduceOp::logsumexp                   ? -INFINITY
                     : op == ReduceOp::mean || op == ReduceOp::var ? nan
                                                                   : 0.0;
    create(CreationOp::fill, Scalar(v), Scalar(0), out);
    return;
  }
  if (dt != DType::f32 && !int_sum &&
      (op == ReduceOp::sum || op == ReduceOp::prod || op == ReduceOp::mean ||
       op == ReduceOp::var || op == ReduceOp::logsumexp)) {
    throw DTypeError(fmt::format(
        "webgpu backend: {} of {} is not done yet (its result is i64)", op_name,
        x.to_string()));
  }

  // The kept axes walk the outputs, the reduced ones each output's group.
  Shape outer, inner;
  Strides outer_s, inner_s;
  std::vector<bool> reduced(size_t(x.ndim()), false);
  for (int a : axes) reduced[size_t(a)] = true;
  for (int d = 0; d < x.ndim(); ++d) {
    (reduced[size_t(d)] ? inner : outer).push_back(x.shape()[size_t(d)]);
    (reduced[size_t(d)] ? inner_s : outer_s).push_back(x.strides()[size_t(d)]);
  }
  const Tensor xo = x.as_strided(outer, outer_s, x.offset());
  const Tensor xi = x.as_strided(inner, inner_s, 0);
  const Tensor* po[] = {&xo};
  const Tensor* pi[] = {&xi};
  std::vector<uint32_t> words = strided_params(outer, po);
  std::vector<uint32_t> w2 = strided_params(inner, pi);
  words.insert(words.end(), w2.begin(), w2.end());
  int64_t total = 1;
  for (int64_t v : inner) total *= v;
  // One workgroup reads at most kChunk values: longer groups are reduced
  // in chunks into partials, then the partials reduced again. One
  // workgroup over 2^21 values and more came out wrong on lavapipe (2^21
  // ones summed to 43690; 2^20 were right; the cause is not found yet).
  const bool can_chunk = op == ReduceOp::sum || op == ReduceOp::mean ||
                         op == ReduceOp::prod || op == ReduceOp::max ||
                         op == ReduceOp::min;
  const bool chunked = can_chunk && total > kChunk;
  if (!can_chunk && total > kLongest) {
    throw BackendError(fmt::format(
        "webgpu backend: {} over groups of more than {} elements is not "
        "done yet (got {} of {})",
        op_name, kLongest, total, x.to_string()));
  }
  const int64_t chunks = chunked ? (total + kChunk - 1) / kChunk : 1;
  words.push_back(uint32_t(int32_t(p.correction)));
  words.push_back(p.take_sqrt ? 1u : 0u);
  words.push_back(uint32_t(chunks));
  words.push_back(uint32_t(chunked ? kChunk : std::max<int64_t>(total, 1)));
  words.push_back(f32_bits(float(total)));
  if (chunked) {
    // Partials [outputs, chunks], then the same op over them (mean sums
    // first and divides by the whole count at the end).
    const DType pd = op == ReduceOp::max || op == ReduceOp::min ? dt
                     : int_sum                                  ? DType::i64
                                                                : DType::f32;
    Tensor partial = Tensor::empty({out.numel(), chunks}, pd, *this);
    const ReduceOp first = op == ReduceOp::mean ? ReduceOp::sum : op;
    run_reduce(ctx, first, x, words, partial, out.numel() * chunks);
    if (op == ReduceOp::mean) {
      Tensor sums = Tensor::empty({out.numel(), 1}, pd, *this);
      reduce(ReduceOp::sum, partial, {1}, p, sums);
      const Tensor* in[] = {&sums};
      Tensor o2 = out.view({out.numel(), 1});
      const uint32_t w = f32_word(1.0 / double(total));
      elementwise(ctx, "mean", "scale", "", "a * X(0u)", in, o2,
                  std::span<const uint32_t>(&w, 1));
      return;
    }
    Tensor o2 = out.view({out.numel(), 1});
    reduce(op, partial, {1}, p, o2);
    return;
  }
  run_reduce(ctx, op, x, words, out, out.numel());
}

namespace {

void run_reduce(Context& ctx, ReduceOp op, const Tensor& x,
                const std::vector<uint32_t>& words, Tensor& out,
                int64_t groups) {
  const char* op_name = nascent::name(op);
  const DType dt = x.dtype();

  std::string body;
  const bool f = dt == DType::f32;
  switch (op) {
    case ReduceOp::sum:
      if (out.dtype() == DType::i64) {
        const std::string wide = dt == DType::i64 ? "xat(base, r)"
                                 : dt == DType::i32
                                     ? "i64_of(xat(base, r))"
                                     : "vec2<u32>(xat(base, r), 0u)";
        body = fmt::format(R"(
  var s = vec2<u32>(0u, 0u);
  for (var r = r0 + t; r < R; r = r + WG) {{ s = i64_add(s, {}); }}
  s64[t] = s;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k >> 1u) {{
    if (t < k) {{ s64[t] = i64_add(s64[t], s64[t + k]); }}
    workgroupBarrier();
  }}
  if (t == 0u) {{ store_O(g, s64[0]); }}
)",
                           wide);
        break;
      }
      body = sum_of("xat(base, r)") + "if (t == 0u) { store_O(g, sf[0]); }";
      break;
    case ReduceOp::mean:
      body = sum_of("xat(base, r)") +
             "if (t == 0u) { store_O(g, sf[0] / pf(E + 4u)); }";
      break;
    case ReduceOp::prod:
      body = R"(
  var s = 1.0;
  for (var r = r0 + t; r < R; r = r + WG) { s = s * xat(base, r); }
  sf[t] = s;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k >> 1u) {
    if (t < k) { sf[t] = sf[t] * sf[t + k]; }
    workgroupBarrier();
  }
  if (t == 0u) { store_O(g, sf[0]); }
)";
      break;
    case ReduceOp::max:
    case ReduceOp::min:
      body = extreme_of(op == ReduceOp::max, dt) +
             "if (t == 0u) { store_O(g, sv[0]); }";
      break;
    case ReduceOp::var: {
      // mean = x0 + mean(x - x0), so a large common offset cancels first
      // (as the CPU).
      body = "let x0 = select(0.0, xat(base, 0u), R > 0u);\n" +
             sum_of("xat(base, r) - x0") +
             "let mean = x0 + sf[0] / f32(R);\nworkgroupBarrier();\n" +
             sum_of("(xat(base, r) - mean) * (xat(base, r) - mean)") + R"(
  if (t == 0u) {
    let dof = max(0.0, f32(R) - f32(XI(0u)));
    var v = sf[0] / dof;
    if (XU(1u) != 0u) { v = sqrt(v); }
    store_O(g, v);
  }
)";
      break;
    }
    case ReduceOp::logsumexp:
      body = extreme_of(true, dt) +
             "let m = sv[0];\nlet shift = select(0.0, m, finite(m));\n"
             "workgroupBarrier();\n" +
             sum_of("exp(xat(base, r) - shift)") + R"(
  if (t == 0u) { store_O(g, select(m, m + log(sf[0]), finite(m))); }
)";
      break;
    case ReduceOp::argmax:
    case ReduceOp::argmin: {
      // (value, index): the extreme, the first of equals; NaN beats all.
      const char* cmp = op == ReduceOp::argmax ? ">" : "<";
      const std::string beats =
          f ? fmt::format(
                  "(is_nan(b) && !is_nan(a)) || (!is_nan(a) && b {} a) || "
                  "(b == a && j < i) || (is_nan(a) && is_nan(b) && j < i)",
                  cmp)
            : fmt::format("(b {} a) || (b == a && j < i)", cmp);
      body = fmt::format(R"(
  var a: V = xat(base, min(t, R - 1u));
  var i = min(t, R - 1u);
  for (var r = t + WG; r < R; r = r + WG) {{
    let b = xat(base, r);
    let j = r;
    if ({0}) {{ a = b; i = j; }}
  }}
  sv[t] = a;
  si[t] = i;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k >> 1u) {{
    if (t < k) {{
      let a2 = sv[t];
      let i2 = si[t];
      let b = sv[t + k];
      let j = si[t + k];
      {{
        let a = a2;
        let i = i2;
        if ({0}) {{ sv[t] = b; si[t] = j; }}
      }}
    }}
    workgroupBarrier();
  }}
  if (t == 0u) {{ store_O(g, vec2<u32>(si[0], 0u)); }}
)",
                         beats);
      break;
    }
  }

  const std::string key =
      fmt::format("reduce_{}:{}:{}", op_name, nascent::name(dt),
                  nascent::name(out.dtype()));
  const std::string hb = "19";
  std::string src = prelude(kReduceGroup);
  src += fmt::format("alias V = {};\nconst E: u32 = 38u;\n", wgsl_type(dt));
  src +=
      "fn XI(k: u32) -> i32 { return pi(E + k); }\n"
      "fn XU(k: u32) -> u32 { return P[E + k]; }\n";
  src += int64_wgsl();
  src += declare("O", 1, out.dtype(), true);
  src += declare("X", 2, dt, false);
  src += "const H: u32 = " + hb + "u;\n";
  src +=
      "fn xat(base: u32, r: u32) -> V { return load_X(base + walk(H, 0u, r)); "
      "}\n"
      "var<workgroup> sf: array<f32, 64>;\n"
      "var<workgroup> sv: array<V, 64>;\n"
      "var<workgroup> si: array<u32, 64>;\n"
      "var<workgroup> s64: array<vec2<u32>, 64>;\n"
      "@compute @workgroup_size(WG)\n"
      "fn main(@builtin(workgroup_id) w: vec3<u32>,\n"
      "        @builtin(num_workgroups) n: vec3<u32>,\n"
      "        @builtin(local_invocation_index) t: u32) {\n"
      "  let g = w.x + w.y * n.x;\n"
      "  let o = g / P[E + 2u];\n"
      "  if (o >= numel()) { return; }\n"
      "  let base = elem(0u, o);\n"
      "  let r0 = (g % P[E + 2u]) * P[E + 3u];\n"
      "  let R = min(P[H], r0 + P[E + 3u]);\n";
  src += body + "\n}\n";
  WGPUComputePipeline pipe = ctx.pipeline(key, src, op_name);
  const WGPUBuffer buffers[] = {buffer_of(out), buffer_of(x)};
  ctx.dispatch(op_name, pipe, words, buffers, uint64_t(groups));
}

}  // namespace

}  // namespace nascent::webgpu
