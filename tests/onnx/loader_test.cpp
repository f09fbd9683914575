// onnx::load on hand-built models: running them against float64 references,
// constant folding of shape arithmetic, the checks at load and at run (each
// error naming the node, field and fault), sizes from the data bounded,
// external data confined to the model's folder, and a fuzz of the decoder.
// Operators' behaviour: ops_test.cpp.
#include <cmath>
#include <fstream>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"
#include "nascent/onnx/model.h"
#include "tests/io/test_files.h"
#include "tests/onnx/test_models.h"

namespace nascent::onnx {
namespace {

using namespace test;

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
