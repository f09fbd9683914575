// Gradchecks of the transformer ops: rope, scaled_dot_product_attention,
// swiglu and geglu. On f64 the CPU runs the composed forwards, so what is
// checked is the autodiff rules (autodiff/rope.cpp, attention.cpp, glu.cpp).
#include "autodiff/gradcheck.h"

namespace nascent::autodiff::testing {
namespace {

using T = std::vector<Tensor>;

struct RopeCase {
  const char* label;
  RopeParams p;
  bool freq_factors;
};

GRADCHECK_CASE(rope, "norm and neox, partial dims, freq_factors, inverse") {
  const RopeCase cases[] = {
      {"norm", {.mode = RopeMode::norm}, false},
      {"neox", {.mode = RopeMode::neox}, false},
      {"norm dims 4 of 8", {.dims = 4, .mode = RopeMode::norm}, false},
      {"neox dims 4 of 8 scale 2",
       {.dims = 4, .mode = RopeMode::neox, .scale = 2.0},
       false},
      {"norm freq_factors base 100",
       {.mode = RopeMode::norm, .base = 100.0},
       true},
      {"neox inverse freq_factors",
       {.mode = RopeMode::neox, .inverse = true},
       true},
  };
  for (const RopeCase& c : cases) {
    auto f = [&](const T& x) {
      // Positions of two sequences side by side; not differentiable.
      const Tensor pos =
          from_vector(std::vector<int32_t>{5, 0, 1}, {3}, backend());
      const int64_t dims = c.p.dims == 0 ? 8 : c.p.dims;
      std::vector<float> ff;
      for (int64_t i = 0; i < dims / 2; ++i) ff.push_back(1.0f + 1.5f * i);
      const Tensor factors = from_vector(ff, {dims / 2}, backend());
      return rope(x[0], pos, c.p, c.freq_factors ? &factors : nullptr);
    };
    // x [B, n, heads, head_dim].
    check_layouts(std::string("rope ") + c.label, {{{2, 3, 2, 8}}}, f);
  }
}

struct AttentionCase {
  const char* label;
  int64_t b, hq, hkv, lq, lk, d, dv;
  bool causal;
  double scale;  // 0: 1 / sqrt(d).
};

std::vector<AttentionCase> attention_cases() {
  return {
      {"causal GQA Lq < Lk", 2, 4, 2, 2, 5, 3, 2, true, 0.0},
      {"GQA Lq < Lk", 2, 4, 2, 2, 5, 3, 2, false, 0.7},
      {"MHA", 2, 2, 2, 3, 3, 4, 4, false, 0.0},
      {"causal MHA", 2, 2, 2, 3, 3, 4, 3, true, 0.0},
      {"causal MQA Lq < Lk", 2, 3, 1, 3, 4, 2, 3, true, 0.0},
  };
}

GRADCHECK_CASE(attention, "causal or not, GQA, MQA, Lq < Lk, masks, views") {
  const std::vector<AttentionCase> cases = attention_cases();
  for (const AttentionCase& c : cases) {
    AttentionParams p{.scale = c.scale, .causal = c.causal};
    const std::string label = std::string("attention ") + c.label;
    check_layouts(label,
                  {{{c.b, c.hq, c.lq, c.d}},
                   {{c.b, c.hkv, c.lk, c.d}},
                   {{c.b, c.hkv, c.lk, c.dv}}},
                  [&](const T& x) {
                    return scaled_dot_product_attention(x[0], x[1], x[2], p);
                  });
    // An additive mask that requires grad: full, broadcast over batch and
    // heads, and over the queries (a padding mask). Every layout for the
    // first case only, to keep the suite's time down.
    const Shape masks[] = {
        {c.b, c.hq, c.lq, c.lk}, {1, 1, c.lq, c.lk}, {c.b, 1, 1, c.lk}};
    for (const Shape& m : masks) {
      auto f = [&](const T& x) {
        return scaled_dot_product_attention(x[0], x[1], x[2], p, &x[3]);
      };
      const std::vector<Input> inputs = {{{c.b, c.hq, c.lq, c.d}},
                                         {{c.b, c.hkv, c.lk, c.d}},
                                         {{c.b, c.hkv, c.lk, c.dv}},
                                         {m}};
      const std::string mask_label = label + " mask " + to_string(m);
      if (&c == &cases.front()) {
        check_layouts(mask_label, inputs, f);
      } else {
        check(mask_label, inputs, f);
      }
    }
    // As a model calls it: q the heads of [B, Lq, Hq, D] (a transposed
    // view), k and v the first Lk positions of a longer cache.
    check(label + " strided q, k and v in a cache",
          {{{c.b, c.lq, c.hq, c.d}},
           {{c.b, c.hkv, c.lk + 3, c.d}},
           {{c.b, c.hkv, c.lk + 3, c.dv}}},
          [&](const T& x) {
            return scaled_dot_product_attention(x[0].transpose(1, 2),
                                                x[1].narrow(2, 1, c.lk),
                                                x[2].narrow(2, 2, c.lk), p);
          });
  }
  // A bool mask (true: seen) that hides keys: -inf scores in the rule. Row
  // i of the GQA case sees keys i to i + 3 of 5.
  const AttentionCase& c = cases[1];
  check("attention GQA bool mask",
        {{{c.b, c.hq, c.lq, c.d}},
         {{c.b, c.hkv, c.lk, c.d}},
         {{c.b, c.hkv, c.lk, c.dv}}},
        [&](const T& x) {
          const Tensor i = arange(c.lq, backend()).unsqueeze(-1);
          const Tensor j = arange(c.lk, backend());
          const Tensor seen = logical_and(ge(j, i), le(j, add(i, 3)));
          return scaled_dot_product_attention(x[0], x[1], x[2], {}, &seen);
        });
}

GRADCHECK_CASE(swiglu, "all layouts") {
  check_layouts("swiglu", {{{3, 4}}, {{3, 4}}},
                [](const T& x) { return swiglu(x[0], x[1]); });
  check("swiglu [2, 17]", {{{2, 17}}, {{2, 17}}},
        [](const T& x) { return swiglu(x[0], x[1]); });
}

GRADCHECK_CASE(geglu, "all layouts") {
  check_layouts("geglu", {{{3, 4}}, {{3, 4}}},
                [](const T& x) { return geglu(x[0], x[1]); });
  check("geglu [2, 17]", {{{2, 17}}, {{2, 17}}},
        [](const T& x) { return geglu(x[0], x[1]); });
}

}  // namespace
}  // namespace nascent::autodiff::testing
