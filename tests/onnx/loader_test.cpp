// onnx::load on hand-built models: running them against float64 references,
// constant folding of shape arithmetic, the checks at load and at run (each
// error naming the node, field and fault), external data confined to the
// model's folder, and a fuzz of the decoder.
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"
#include "nascent/onnx/model.h"
#include "tests/io/test_files.h"
#include "tests/onnx/pb_writer.h"

namespace nascent::onnx {
namespace {

using namespace test;

std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

Model load_string(const std::string& s, Backend& b,
                  const std::string& dir = "") {
  return load_bytes(as_bytes(s), "test.onnx", dir, b);
}

template <class E>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error of the expected type";
  return {};
}

// Y = Relu(X @ W + B): X [N, 3], W [3, 2] as raw_data, B [2] as float_data.
GraphParts mlp_parts() {
  GraphParts g;
  g.initializers = {tensor_f32("W", {3, 2}, {1, -2, 0.5f, 3, -1, 4}),
                    tensor_f32("B", {2}, {0.25f, -10}, false)};
  g.inputs = {value_info("X", 1, {-1, 3})};
  g.outputs = {value_info("Y", 1, {-1, 2})};
  g.nodes = {node("MatMul", {"X", "W"}, {"XW"}, "mm"),
             node("Add", {"XW", "B"}, {"Z"}, "add"),
             node("Relu", {"Z"}, {"Y"}, "relu")};
  return g;
}

TEST(OnnxLoader, RunsAGraphAgainstAFloat64Reference) {
  cpu::Backend cpu;
  Model m = load_string(model(mlp_parts()), cpu);
  ASSERT_EQ(m.inputs().size(), 1u);
  EXPECT_EQ(to_string(m.inputs()[0]), "X f32[N, 3]");
  EXPECT_EQ(m.opset(), 17);
  std::vector<float> x = {1, 2, 3, -1, 0.5f, 2};
  std::vector<Tensor> y = m.run({from_vector(x, {2, 3}, cpu)});
  ASSERT_EQ(y.size(), 1u);
  ASSERT_EQ(y[0].shape(), (Shape{2, 2}));
  const double w[3][2] = {{1, -2}, {0.5, 3}, {-1, 4}}, b[2] = {0.25, -10};
  std::vector<float> got = y[0].to_vector<float>();
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      double z = b[j];
      for (int k = 0; k < 3; ++k) z += double(x[size_t(i * 3 + k)]) * w[k][j];
      EXPECT_NEAR(got[size_t(i * 2 + j)], std::max(z, 0.0), 1e-6);
    }
  }
}

TEST(OnnxLoader, FoldsConstantShapeArithmeticAtLoad) {
  // Reshape(X, Concat(Unsqueeze(Gather(Shape(X), 0)), [-1])): the shape
  // depends on X, so only the [-1] constant folds; a Constant node and
  // its Neg fold away entirely.
  cpu::Backend cpu;
  GraphParts g;
  g.initializers = {tensor_i64("zero", {}, {0}), tensor_i64("axes", {1}, {0}),
                    tensor_i64("minus1", {1}, {-1})};
  g.inputs = {value_info("X", 1, {-1, 2, 3})};
  g.outputs = {value_info("Y", 1, {-1, 6}), value_info("C", 1, {1})};
  Pb value;
  value.str(1, "value").msg(5, tensor_f32("", {1}, {2.5f})).varint(20, 4);
  g.nodes = {node("Shape", {"X"}, {"s"}, "shape"),
             node("Gather", {"s", "zero"}, {"n"}, "gather"),
             node("Unsqueeze", {"n", "axes"}, {"n1"}, "unsq"),
             node("Concat", {"n1", "minus1"}, {"shape2"}, "cat",
                  {attr_int("axis", 0)}),
             node("Reshape", {"X", "shape2"}, {"Y"}, "reshape"),
             node("Constant", {}, {"c0"}, "const", {value}),
             node("Neg", {"c0"}, {"C"}, "neg")};
  Model m = load_string(model(g), cpu);
  EXPECT_EQ(m.node_count(), 5u);  // Constant and Neg ran at load.
  std::vector<Tensor> y =
      m.run({arange(0.0, 24.0, 1.0, cpu).reshape({4, 2, 3})});
  EXPECT_EQ(y[0].shape(), (Shape{4, 6}));
  EXPECT_EQ(y[0].to_vector<float>()[23], 23.0f);
  EXPECT_EQ(y[1].to_vector<float>(), std::vector<float>{-2.5f});
}

TEST(OnnxLoader, RefusesAnUnsupportedOperatorByNameDomainAndOpset) {
  cpu::Backend cpu;
  GraphParts g = mlp_parts();
  g.nodes[2] = node("NonZero", {"Z"}, {"Y"}, "nz");
  std::string msg =
      error_of<UnsupportedError>([&] { load_string(model(g), cpu); });
  EXPECT_NE(msg.find("NonZero"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ai.onnx"), std::string::npos) << msg;
  EXPECT_NE(msg.find("opset 17"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'nz'"), std::string::npos) << msg;
  g.nodes[2] = node("Relu", {"Z"}, {"Y"}, "r", {}, "com.example");
  msg = error_of<UnsupportedError>([&] { load_string(model(g), cpu); });
  EXPECT_NE(msg.find("com.example"), std::string::npos) << msg;
  msg = error_of<UnsupportedError>(
      [&] { load_string(model(mlp_parts(), 11), cpu); });
  EXPECT_NE(msg.find("opset 11"), std::string::npos) << msg;
  EXPECT_FALSE(is_supported("NonZero", "", 17));
  EXPECT_TRUE(is_supported("Conv", "", 17));
  EXPECT_FALSE(is_supported("LayerNormalization", "", 16));  // Since 17.
}

TEST(OnnxLoader, MalformedGraphsNameTheNodeAndField) {
  cpu::Backend cpu;
  GraphParts g = mlp_parts();
  g.nodes[1] = node("Add", {"XW", "nowhere"}, {"Z"}, "add");
  std::string msg = error_of<FormatError>([&] { load_string(model(g), cpu); });
  EXPECT_NE(msg.find("'add'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'nowhere'"), std::string::npos) << msg;

  g = mlp_parts();
  g.nodes.push_back(node("Relu", {"Z"}, {"XW"}, "again"));
  msg = error_of<FormatError>([&] { load_string(model(g), cpu); });
  EXPECT_NE(msg.find("defined twice"), std::string::npos) << msg;

  g = mlp_parts();
  g.initializers[0] = tensor_f32("W", {3, 2}, {1, 2, 3});  // 3 of 6 values.
  msg = error_of<FormatError>([&] { load_string(model(g), cpu); });
  EXPECT_NE(msg.find("initializer 0 'W'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("raw_data has 12 bytes"), std::string::npos) << msg;

  g = mlp_parts();
  g.initializers[0] = tensor_f32("W", {3, -2}, {1, 2, 3, 4, 5, 6});
  msg = error_of<FormatError>([&] { load_string(model(g), cpu); });
  EXPECT_NE(msg.find("negative dimension"), std::string::npos) << msg;

  // An attribute whose 'i' field is sent as bytes: the decoder names the
  // node, the attribute and the field.
  g = mlp_parts();
  Pb bad;
  bad.str(1, "axis").str(3, "xx");
  g.nodes[2] = node("Softmax", {"Z"}, {"Y"}, "sm", {bad});
  msg = error_of<FormatError>([&] { load_string(model(g), cpu); });
  EXPECT_NE(msg.find("graph.node[2] 'sm' (Softmax).attribute[0]"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("field 'i'"), std::string::npos) << msg;

  // Attribute values out of range are the file's fault too.
  g = mlp_parts();
  g.nodes[2] =
      node("Conv", {"Z", "W"}, {"Y"}, "conv", {attr_ints("strides", {0, 1})});
  msg = error_of<FormatError>([&] { load_string(model(g), cpu); });
  EXPECT_NE(msg.find("'conv'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("stride 0"), std::string::npos) << msg;
}

TEST(OnnxLoader, TruncatedAndCorruptBytesAreFormatErrors) {
  cpu::Backend cpu;
  const std::string good = model(mlp_parts());
  for (size_t n : {size_t(0), size_t(1), good.size() / 2, good.size() - 1}) {
    EXPECT_THROW(load_string(good.substr(0, n), cpu), FormatError) << n;
  }
  std::string groups = good;
  groups[0] = char(1 << 3 | 3);  // Wire type 3: a group.
  std::string msg = error_of<FormatError>([&] { load_string(groups, cpu); });
  EXPECT_NE(msg.find("wire type 3"), std::string::npos) << msg;
  // A length far beyond the file: refused before any allocation.
  Pb huge;
  huge.tag(7, 2).raw_varint(uint64_t(1) << 40);
  msg = error_of<FormatError>([&] { load_string(huge.bytes, cpu); });
  EXPECT_NE(msg.find("runs past the end"), std::string::npos) << msg;
}

TEST(OnnxLoader, ChecksInputsAtRun) {
  cpu::Backend cpu;
  Model m = load_string(model(mlp_parts()), cpu);
  EXPECT_THROW(m.run({zeros({2, 3}, cpu, DType::f64)}), DTypeError);
  EXPECT_THROW(m.run({zeros({2, 4}, cpu)}), ShapeError);
  EXPECT_THROW(m.run({}), ValueError);
}

TEST(OnnxLoader, ResizeRefusesHostileScales) {
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

TEST(OnnxLoader, GatherAndGemmPrepareConstantInputsAtLoad) {
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

TEST(OnnxLoader, IntegerDivTruncatesOnBothPaths) {
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

TEST(OnnxLoader, GatherNDAndScatterNDCheckEachIndex) {
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

TEST(OnnxLoader, SizesFromTheDataAreBoundedAtLoadAndRun) {
  // ConstantOfShape of a constant shape folds at load when small; a huge
  // one is left to run time (the loader allocates nothing for it), where
  // it is refused before allocating; Range likewise.
  cpu::Backend cpu;
  auto filled = [&](const std::vector<int64_t>& dims) {
    GraphParts g;
    g.initializers = {tensor_i64("S", {int64_t(dims.size())}, dims)};
    g.outputs = {value_info("Y", 1, {})};
    g.nodes = {node("ConstantOfShape", {"S"}, {"Y"}, "fill")};
    return load_string(model(g), cpu);
  };
  Model small = filled({2, 3});
  EXPECT_EQ(small.node_count(), 0u);
  EXPECT_EQ(small.run({})[0].to_vector<float>(), std::vector<float>(6, 0.0f));
  for (const auto& dims : std::vector<std::vector<int64_t>>{
           {100000, 100000}, {int64_t(1) << 40, int64_t(1) << 40}}) {
    Model huge = filled(dims);
    EXPECT_EQ(huge.node_count(), 1u);
    std::string msg = error_of<ValueError>([&] { huge.run({}); });
    EXPECT_NE(msg.find("ConstantOfShape"), std::string::npos) << msg;
  }
  GraphParts g;
  g.initializers = {tensor_i64("A", {}, {std::numeric_limits<int64_t>::min()}),
                    tensor_i64("B", {}, {std::numeric_limits<int64_t>::max()}),
                    tensor_i64("D", {}, {1})};
  g.outputs = {value_info("Y", 7, {})};
  g.nodes = {node("Range", {"A", "B", "D"}, {"Y"}, "range")};
  Model range = load_string(model(g), cpu);
  std::string msg = error_of<ValueError>([&] { range.run({}); });
  EXPECT_NE(msg.find("Range"), std::string::npos) << msg;
  // Pads of a billion around a 2x2 image.
  GraphParts pg;
  const int64_t big = 1000000000;
  pg.inputs = {value_info("X", 1, {1, 1, 2, 2})};
  pg.outputs = {value_info("Y", 1, {})};
  pg.nodes = {node("MaxPool", {"X"}, {"Y"}, "mp",
                   {attr_ints("kernel_shape", {2, 2}),
                    attr_ints("pads", {big, big, big, big})})};
  Model padded = load_string(model(pg), cpu);
  msg = error_of<ValueError>([&] { padded.run({ones({1, 1, 2, 2}, cpu)}); });
  EXPECT_NE(msg.find("MaxPool"), std::string::npos) << msg;
}

TEST(OnnxLoader, InverseTrigonometryMatchesTheStandardLibrary) {
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

TEST(OnnxLoader, LstmReverseWithPeepholesInputForgetAndClip) {
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

TEST(OnnxLoader, PoolingCountsAsOnnxsReference) {
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

TEST(OnnxLoader, PadModesMatchNumpyPad) {
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

TEST(OnnxLoader, ExternalDataStaysInTheModelsFolder) {
  cpu::Backend cpu;
  nascent::testing::TempDir dir;
  std::vector<float> w = {1, -2, 0.5f, 3, -1, 4};
  {
    std::ofstream out(dir.file("weights.bin"), std::ios::binary);
    out.write("pad!", 4);
    out.write(reinterpret_cast<const char*>(w.data()), 24);
  }
  auto external = [](const std::string& location, const std::string& offset) {
    Pb t;
    t.packed(1, {3, 2}).varint(2, 1).str(8, "W").varint(14, 1);
    Pb loc, off;
    loc.str(1, "location").str(2, location);
    off.str(1, "offset").str(2, offset);
    t.msg(13, loc).msg(13, off);
    return t;
  };
  GraphParts g = mlp_parts();
  g.initializers[0] = external("weights.bin", "4");
  Model m = load_string(model(g), cpu, dir.path());
  std::vector<float> y =
      m.run({from_vector<float>({1, 0, 0}, {1, 3}, cpu)})[0].to_vector<float>();
  EXPECT_EQ(y, (std::vector<float>{1.25f, 0}));

  for (const char* where : {"../weights.bin", "/etc/passwd", "a/../../x"}) {
    g.initializers[0] = external(where, "0");
    std::string msg =
        error_of<FormatError>([&] { load_string(model(g), cpu, dir.path()); });
    EXPECT_NE(msg.find("model's folder"), std::string::npos) << msg;
  }
  g.initializers[0] = external("weights.bin", "8");  // 4 bytes short.
  std::string msg =
      error_of<FormatError>([&] { load_string(model(g), cpu, dir.path()); });
  EXPECT_NE(msg.find("outside 'weights.bin'"), std::string::npos) << msg;
  g.initializers[0] = external("weights.bin", "4");
  EXPECT_THROW(load_string(model(g), cpu), FormatError);  // From memory.
}

// Mutated copies of a valid model either load (and run or raise) or raise
// a nascent::Error; nothing else escapes, nothing crashes.
TEST(OnnxLoader, FuzzedModelsRaiseErrorsOnly) {
  cpu::Backend cpu;
  GraphParts g = mlp_parts();
  g.nodes.push_back(
      node("Softmax", {"Y"}, {"P"}, "sm", {attr_int("axis", -1)}));
  g.outputs.push_back(value_info("P", 1, {-1, 2}));
  const std::string good = model(g);
  std::mt19937 rng(19);
  int loaded = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::string s = good;
    int edits = 1 + int(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % s.size();
      switch (rng() % 4) {
        case 0:
          s[at] = char(rng());
          break;
        case 1:
          s[at] = char(uint8_t(s[at]) ^ (1u << (rng() % 8)));
          break;
        case 2:
          s.resize(at);
          break;
        default:
          s.insert(at, 1, char(rng()));
          break;
      }
      if (s.empty()) break;
    }
    try {
      Model m = load_string(s, cpu);
      ++loaded;
      std::vector<Tensor> in;
      bool small = true;
      for (const auto& spec : m.inputs()) {
        Shape shape;
        for (const auto& d : spec.dims) {
          shape.push_back(d.value >= 0 ? d.value : 2);
          small = small && d.value <= 64;
        }
        in.push_back(small ? zeros(shape, cpu, spec.dtype) : Tensor());
      }
      if (small) m.run(in);
    } catch (const Error&) {
    }
  }
  EXPECT_GT(loaded, 0);  // Some mutations only touch names or values.
}

}  // namespace
}  // namespace nascent::onnx
