// Operators of the ONNX import on hand-built models, where ONNX's node
// cases leave gaps: hostile sizes, constant inputs prepared at load, both
// paths of integer Div, index checks, inverse trigonometry against std::,
// LSTM features PyTorch never exports, pooling's counting, Pad's modes.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"
#include "tests/onnx/test_models.h"

namespace nascent::onnx {
namespace {

using namespace test;

TEST(OnnxOps, ResizeRefusesHostileScales) {
  // Nearest x2 on the last axis against a by-hand expectation, then scales
  // that would overflow, allocate without bound or are not numbers.
  cpu::Backend cpu;
  auto resize = [&](float scale) {
    GraphParts g;
    g.initializers = {tensor_f32("S", {3}, {1, 1, scale})};
    g.inputs = {value_info("X", 1, {1, 2, 2})};
    g.outputs = {value_info("Y", 1, {})};
    g.nodes = {node("Resize", {"X", "", "S"}, {"Y"}, "rs")};
    return load_string(model(g), cpu);
  };
  Tensor x = from_vector<float>({1, 2, 3, 4}, {1, 2, 2}, cpu);
  Tensor y = resize(2).run({x})[0];
  EXPECT_EQ(y.shape(), (Shape{1, 2, 4}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 1, 2, 2, 3, 3, 4, 4}));
  for (float bad : {1e30f, 1e8f, std::nanf(""), -1.0f, INFINITY}) {
    Model m = resize(bad);
    std::string msg = error_of<ValueError>([&] { m.run({x}); });
    EXPECT_NE(msg.find("Resize"), std::string::npos) << msg;
  }
}

TEST(OnnxOps, GatherAndGemmPrepareConstantInputsAtLoad) {
  // Constant indices, one counting from the end, and a constant transposed
  // Gemm weight at 1 and 5 rows (both of its layouts), against references.
  cpu::Backend cpu;
  GraphParts g;
  g.initializers = {tensor_i64("I", {2}, {-1, 0}),
                    tensor_f32("W", {2, 3}, {1, -2, 0.5f, 3, -1, 4})};
  g.inputs = {value_info("X", 1, {-1, 3})};
  g.outputs = {value_info("G", 1, {2, 3}), value_info("Y", 1, {-1, 2})};
  g.nodes = {node("Gather", {"X", "I"}, {"G"}, "g"),
             node("Gemm", {"X", "W"}, {"Y"}, "fc", {attr_int("transB", 1)})};
  Model m = load_string(model(g), cpu);
  for (int64_t rows : {1, 5}) {
    std::vector<float> x;
    for (int64_t i = 0; i < rows * 3; ++i) x.push_back(float(i % 7) - 2.5f);
    std::vector<Tensor> out = m.run({from_vector(x, {rows, 3}, cpu)});
    std::vector<float> gathered = out[0].to_vector<float>();
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_EQ(gathered[size_t(j)], x[size_t((rows - 1) * 3 + j)]);
      EXPECT_EQ(gathered[size_t(3 + j)], x[size_t(j)]);
    }
    const double w[2][3] = {{1, -2, 0.5}, {3, -1, 4}};
    std::vector<float> y = out[1].to_vector<float>();
    ASSERT_EQ(y.size(), size_t(rows * 2));
    for (int64_t i = 0; i < rows; ++i) {
      for (int j = 0; j < 2; ++j) {
        double want = 0;
        for (int k = 0; k < 3; ++k)
          want += double(x[size_t(i * 3 + k)]) * w[j][k];
        EXPECT_NEAR(y[size_t(i * 2 + j)], want, 1e-5) << rows << " rows";
      }
    }
  }
}

TEST(OnnxOps, IntegerDivTruncatesOnBothPaths) {
  // A / B in int64, B a scalar initializer: small inputs divide on the
  // host, large ones through f64; both truncate toward zero as C++ does.
  cpu::Backend cpu;
  auto div_model = [&](int64_t divisor) {
    GraphParts g;
    g.initializers = {tensor_i64("B", {}, {divisor})};
    g.inputs = {value_info("A", 7, {-1})};
    g.outputs = {value_info("Y", 7, {-1})};
    g.nodes = {node("Div", {"A", "B"}, {"Y"}, "div")};
    return load_string(model(g), cpu);
  };
  for (int64_t divisor : {3, -4}) {
    Model m = div_model(divisor);
    for (int64_t n : {7, 300}) {
      std::vector<int64_t> a;
      for (int64_t i = 0; i < n; ++i) a.push_back(i * 37 % 101 - 50);
      std::vector<int64_t> y =
          m.run({from_vector(a, {n}, cpu)})[0].to_vector<int64_t>();
      ASSERT_EQ(y.size(), a.size());
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(y[i], a[i] / divisor) << a[i] << " / " << divisor;
      }
    }
  }
  Model zero = div_model(0);
  std::string msg = error_of<ValueError>([&] {
    zero.run({from_vector<int64_t>({5, 6}, {2}, cpu)});
  });
  EXPECT_NE(msg.find("division by zero"), std::string::npos) << msg;
}

TEST(OnnxOps, GatherNDAndScatterNDCheckEachIndex) {
  // X [2, 3]; I picks (1, -1) and (0, 1). GatherND reads X[1, 2], X[0, 1];
  // ScatterND writes U there. (0, 5) has a linear index inside X but its
  // second entry is outside its axis: refused, not read from row 1.
  cpu::Backend cpu;
  auto nd_model = [&](const std::vector<int64_t>& idx) {
    GraphParts g;
    g.initializers = {tensor_i64("I", {2, 2}, idx),
                      tensor_f32("U", {2}, {100, 200})};
    g.inputs = {value_info("X", 1, {2, 3})};
    g.outputs = {value_info("G", 1, {2}), value_info("S", 1, {2, 3})};
    g.nodes = {node("GatherND", {"X", "I"}, {"G"}, "gnd"),
               node("ScatterND", {"X", "I", "U"}, {"S"}, "snd")};
    return load_string(model(g), cpu);
  };
  Tensor x = from_vector<float>({0, 1, 2, 3, 4, 5}, {2, 3}, cpu);
  std::vector<Tensor> y = nd_model({1, -1, 0, 1}).run({x});
  EXPECT_EQ(y[0].to_vector<float>(), (std::vector<float>{5, 1}));
  EXPECT_EQ(y[1].to_vector<float>(),
            (std::vector<float>{0, 200, 2, 3, 4, 100}));
  Model bad = nd_model({0, 5, 0, 0});
  std::string msg = error_of<ValueError>([&] { bad.run({x}); });
  EXPECT_NE(msg.find("GatherND"), std::string::npos) << msg;
}

TEST(OnnxOps, InverseTrigonometryMatchesTheStandardLibrary) {
  // Atan, Asin, Acos in f64 (built from sin and cos) against std::,
  // including the ends of their domains, infinities and NaN.
  cpu::Backend cpu;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> x = {0, 1, -1, 0.5, -0.999999, 1e-300, 1e300, -inf, inf};
  for (int i = -50; i <= 50; ++i) x.push_back(i / 50.0 * 1.3);
  x.push_back(std::nan(""));
  const std::vector<std::pair<std::string, double (*)(double)>> ops = {
      {"Atan", [](double v) { return std::atan(v); }},
      {"Asin", [](double v) { return std::asin(v); }},
      {"Acos", [](double v) { return std::acos(v); }}};
  for (const auto& [op, ref] : ops) {
    GraphParts g;
    g.inputs = {value_info("X", 11, {-1})};
    g.outputs = {value_info("Y", 11, {-1})};
    g.nodes = {node(op, {"X"}, {"Y"}, "f")};
    Model m = load_string(model(g), cpu);
    std::vector<double> y = m.run({from_vector(x, {int64_t(x.size())}, cpu)})[0]
                                .to_vector<double>();
    for (size_t i = 0; i < x.size(); ++i) {
      double want = ref(x[i]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(y[i])) << op << "(" << x[i] << ") = " << y[i];
      } else {
        EXPECT_NEAR(y[i], want, 1e-14 + 1e-13 * std::abs(want))
            << op << "(" << x[i] << ")";
      }
    }
  }
}

TEST(OnnxOps, LstmReverseWithPeepholesInputForgetAndClip) {
  // What PyTorch never exports, against a float64 loop of ONNX's
  // equations: S 3 steps, B 2, I 2, H 2; gates i, o, f, c.
  cpu::Backend cpu;
  const int S = 3, B = 2, I = 2, H = 2;
  const double clip = 0.3;
  std::vector<float> w(4 * H * I), r(4 * H * H), bias(8 * H), p(3 * H),
      x(S * B * I);
  auto fill = [](std::vector<float>& v, float scale, int seed) {
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = scale * float(int((i * 7 + size_t(seed)) % 11) - 5) / 5.0f;
  };
  fill(w, 0.9f, 1), fill(r, 0.7f, 2), fill(bias, 0.2f, 3), fill(p, 0.5f, 4);
  fill(x, 1.5f, 5);
  GraphParts g;
  g.initializers = {
      tensor_f32("W", {1, 4 * H, I}, w), tensor_f32("R", {1, 4 * H, H}, r),
      tensor_f32("B", {1, 8 * H}, bias), tensor_f32("P", {1, 3 * H}, p)};
  g.inputs = {value_info("X", 1, {S, B, I})};
  g.outputs = {value_info("Y", 1, {S, 1, B, H}), value_info("Yh", 1, {1, B, H}),
               value_info("Yc", 1, {1, B, H})};
  g.nodes = {node(
      "LSTM", {"X", "W", "R", "B", "", "", "", "P"}, {"Y", "Yh", "Yc"}, "lstm",
      {attr_str("direction", "reverse"), attr_int("input_forget", 1),
       attr_f("clip", float(clip)), attr_int("hidden_size", H)})};
  Model m = load_string(model(g), cpu);
  std::vector<Tensor> out = m.run({from_vector(x, {S, B, I}, cpu)});
  std::vector<float> y = out[0].to_vector<float>(),
                     yh = out[1].to_vector<float>(),
                     yc = out[2].to_vector<float>();
  auto sig = [&](double v) {
    return 1 / (1 + std::exp(-std::clamp(v, -clip, clip)));
  };
  auto th = [&](double v) { return std::tanh(std::clamp(v, -clip, clip)); };
  std::vector<double> h(B * H, 0), c(B * H, 0);
  for (int t = S - 1; t >= 0; --t) {
    std::vector<double> hn(B * H), cn(B * H);
    for (int b = 0; b < B; ++b) {
      for (int j = 0; j < H; ++j) {
        double gate[4];
        for (int k = 0; k < 4; ++k) {
          int row = k * H + j;
          double v = bias[size_t(row)] + bias[size_t(4 * H + row)];
          for (int q = 0; q < I; ++q)
            v +=
                double(w[size_t(row * I + q)]) * x[size_t((t * B + b) * I + q)];
          for (int q = 0; q < H; ++q)
            v += double(r[size_t(row * H + q)]) * h[size_t(b * H + q)];
          gate[k] = v;
        }
        const double cp = c[size_t(b * H + j)];
        double i = sig(gate[0] + p[size_t(j)] * cp);
        double f = 1 - i;  // input_forget
        double cc = f * cp + i * th(gate[3]);
        double o = sig(gate[1] + p[size_t(H + j)] * cc);
        cn[size_t(b * H + j)] = cc;
        hn[size_t(b * H + j)] = o * th(cc);
      }
    }
    h = hn, c = cn;
    for (int k = 0; k < B * H; ++k) {
      EXPECT_NEAR(y[size_t(t * B * H + k)], h[size_t(k)], 1e-6) << "step " << t;
    }
  }
  for (int k = 0; k < B * H; ++k) {
    EXPECT_NEAR(yh[size_t(k)], h[size_t(k)], 1e-6);
    EXPECT_NEAR(yc[size_t(k)], c[size_t(k)], 1e-6);
  }
}

TEST(OnnxOps, PoolingCountsAsOnnxsReference) {
  // AveragePool 3 / stride 2 / pad 1, ceil_mode, count_include_pad over
  // ones of 6 per axis: windows start at -1, 1, 3, 5 and hold 2, 3, 3, 1
  // input entries; ONNX's reference divides by the whole window (3 per
  // axis, the ceil overhang included). In 2-D (core's pool) and 3-D (the
  // sliced path).
  cpu::Backend cpu;
  const double inside[4] = {2, 3, 3, 1};
  for (int rank : {2, 3}) {
    std::vector<int64_t> dims = {1, 1}, k, s, p;
    for (int i = 0; i < rank; ++i) {
      dims.push_back(6), k.push_back(3), s.push_back(2);
      p.push_back(1), p.push_back(1);
    }
    GraphParts g;
    g.inputs = {value_info("X", 1, dims)};
    g.outputs = {value_info("Y", 1, {})};
    g.nodes = {node("AveragePool", {"X"}, {"Y"}, "ap",
                    {attr_ints("kernel_shape", k), attr_ints("strides", s),
                     attr_ints("pads", p), attr_int("ceil_mode", 1),
                     attr_int("count_include_pad", 1)})};
    Model m = load_string(model(g), cpu);
    Shape xs(dims.begin(), dims.end());
    std::vector<float> y = m.run({ones(xs, cpu)})[0].to_vector<float>();
    ASSERT_EQ(y.size(), size_t(rank == 2 ? 16 : 64));
    for (size_t i = 0; i < y.size(); ++i) {
      double want = 1;
      size_t rest = i;
      for (int a = 0; a < rank; ++a, rest /= 4) want *= inside[rest % 4] / 3;
      EXPECT_NEAR(y[i], want, 1e-6) << rank << "-D, output " << i;
    }
  }
  // MaxPool 2x2, dilation 2, stride 1 over 5x5: max of x[i + 2a][j + 2b].
  std::vector<float> x(25);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 7) % 11);
  GraphParts g;
  g.inputs = {value_info("X", 1, {1, 1, 5, 5})};
  g.outputs = {value_info("Y", 1, {})};
  g.nodes = {node(
      "MaxPool", {"X"}, {"Y"}, "mp",
      {attr_ints("kernel_shape", {2, 2}), attr_ints("dilations", {2, 2})})};
  std::vector<float> y = load_string(model(g), cpu)
                             .run({from_vector(x, {1, 1, 5, 5}, cpu)})[0]
                             .to_vector<float>();
  ASSERT_EQ(y.size(), 9u);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      float want = 0;
      for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b)
          want = std::max(want, x[size_t((i + 2 * a) * 5 + j + 2 * b)]);
      EXPECT_EQ(y[size_t(i * 3 + j)], want);
    }
  }
}

TEST(OnnxOps, PadModesMatchNumpyPad) {
  // numpy.pad([1, 2, 3], (4, 5), mode): pads longer than the axis reflect
  // and wrap again.
  cpu::Backend cpu;
  auto pad_model = [&](const std::string& mode) {
    GraphParts g;
    g.initializers = {tensor_i64("P", {2}, {4, 5})};
    g.inputs = {value_info("X", 1, {3})};
    g.outputs = {value_info("Y", 1, {12})};
    g.nodes = {node("Pad", {"X", "P"}, {"Y"}, "pad", {attr_str("mode", mode)})};
    return model(g);
  };
  const std::map<std::string, std::vector<float>> want = {
      {"reflect", {1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2}},
      {"wrap", {3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2}},
      {"edge", {1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 3, 3}}};
  Tensor x = from_vector<float>({1, 2, 3}, {3}, cpu);
  for (const auto& [mode, values] : want) {
    Model m = load_string(pad_model(mode), cpu);
    EXPECT_EQ(m.run({x})[0].to_vector<float>(), values) << mode;
  }
  std::string msg =
      error_of<FormatError>([&] { load_string(pad_model("mirror"), cpu); });
  EXPECT_NE(msg.find("'mirror'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace nascent::onnx
