// nascent quantize: type names, dequantize(quantize(x)) error bounds per
// type, bytes equal to the reference quantizer row by row, metadata kept,
// llama.cpp's per-tensor mixes and fallbacks, and errors.
#include <cmath>
#include <cstring>
#include <map>

#include <gtest/gtest.h>

#include "io/test_files.h"
#include "models/llama/gguf_floats.h"
#include "nascent/core/error.h"
#include "nascent/io/gguf_reader.h"
#include "nascent/io/gguf_writer.h"
#include "nascent/models/llama/quantize.h"
#include "nascent/models/llama/random_model.h"
#include "nascent/quant/codec.h"

namespace nascent::test {
namespace {

using llama::FileType;
using llama::QuantizeOptions;
using testing::expect_error;

using testing::floats;

llama::RandomModelConfig config256() {
  llama::RandomModelConfig c;
  c.n_embd = 256;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_head_kv = 1;
  c.n_ff = 512;
  c.n_vocab = 320;
  c.seed = 3;
  return c;
}

TEST(Quantize, FileTypeNames) {
  EXPECT_EQ(llama::file_type_from_name("q4_k_m"), FileType::q4_k_m);
  EXPECT_EQ(llama::file_type_from_name("Q4_K_M"), FileType::q4_k_m);
  EXPECT_EQ(llama::file_type_from_name("q4_k"), FileType::q4_k_m);
  EXPECT_EQ(llama::file_type_from_name("q3_k"), FileType::q3_k_m);
  EXPECT_EQ(llama::file_type_from_name("q5_k"), FileType::q5_k_m);
  EXPECT_EQ(llama::file_type_from_name("Q8_0"), FileType::q8_0);
  EXPECT_EQ(llama::file_type_from_name("bf16"), FileType::bf16);
  EXPECT_EQ(llama::file_type_from_name("q4_k_x"), std::nullopt);
  EXPECT_EQ(llama::file_type_from_name(""), std::nullopt);
  EXPECT_STREQ(llama::name(FileType::q4_k_m), "Q4_K_M");
  EXPECT_EQ(llama::default_type(FileType::q3_k_l), QuantType::q3_k);
  EXPECT_NE(llama::file_type_names().find("q5_k_s"), std::string::npos);
}

// The relative RMS error of each type on normal weights, with the bytes of
// every tensor equal to the reference quantizer on its rows (so the
// threaded conversion put every row in its place).
TEST(Quantize, RoundTripErrorPerType) {
  testing::TempDir dir;
  llama::RandomModelConfig c = config256();
  c.n_layer = 1;
  llama::write_random_model(c, dir.file("f32.gguf"));
  c.type = QuantType::f16;
  llama::write_random_model(c, dir.file("f16.gguf"));
  // About 1.2x the errors measured on these weights (q8_0: 0.0053, q4_0:
  // 0.086, q4_K: 0.071, q2_K: 0.30).
  const std::map<FileType, double> bound = {
      {FileType::f16, 4e-4},     {FileType::bf16, 3e-3},
      {FileType::q8_0, 0.0065},  {FileType::q6_k, 0.022},
      {FileType::q5_1, 0.045},   {FileType::q5_0, 0.05},
      {FileType::q5_k_s, 0.042}, {FileType::q4_1, 0.09},
      {FileType::q4_0, 0.10},    {FileType::q4_k_s, 0.085},
      {FileType::q3_k_s, 0.18},  {FileType::q2_k, 0.35},
  };

  gguf::Reader f32(dir.file("f32.gguf"));
  for (const char* input : {"f32.gguf", "f16.gguf"}) {
    for (const auto& [type, max_err] : bound) {
      // From f16, a few types suffice (the conversion to f32 comes first).
      if (std::string(input) == "f16.gguf" && type != FileType::bf16 &&
          type != FileType::q8_0 && type != FileType::q4_k_s) {
        continue;
      }
      QuantizeOptions o;
      o.type = type;
      o.pure = true;
      llama::quantize_model(dir.file(input), dir.file("q.gguf"), o);
      gguf::Reader in(dir.file(input)), q(dir.file("q.gguf"));
      QuantType want = llama::default_type(type);
      for (const auto& t : in.tensors()) {
        const gguf::TensorInfo& tq = q.tensor(t.name);
        std::vector<float> x = floats(in, t);
        if (t.shape.size() == 1) {
          EXPECT_EQ(tq.type, QuantType::f32) << t.name;
          EXPECT_EQ(floats(q, tq), x) << t.name;
          continue;
        }
        ASSERT_EQ(tq.type, want) << t.name << " " << llama::name(type);
        std::vector<uint8_t> ref(row_bytes(want, t.numel()));
        quant::quantize_row(want, x.data(), ref.data(), t.numel());
        auto got = q.tensor_data(tq);
        ASSERT_EQ(got.size(), ref.size());
        EXPECT_EQ(std::memcmp(got.data(), ref.data(), ref.size()), 0)
            << t.name << " " << llama::name(type);
        // Error against the f32 original, relative to its RMS.
        std::vector<float> orig = floats(f32, f32.tensor(t.name));
        std::vector<float> y = floats(q, tq);
        double err = 0, norm = 0;
        for (size_t i = 0; i < y.size(); ++i) {
          err += (double(y[i]) - orig[i]) * (double(y[i]) - orig[i]);
          norm += double(orig[i]) * orig[i];
        }
        double rel = std::sqrt(err / norm);
        EXPECT_LT(rel, max_err) << t.name << " " << llama::name(type);
        // Lossy types lose something (the file is not a copy).
        if (type != FileType::f16 || std::string(input) == "f32.gguf") {
          EXPECT_GT(rel, 0.0) << t.name << " " << llama::name(type);
        }
      }
    }
  }
}

TEST(Quantize, MetadataIsKeptAndFileTypeSet) {
  testing::TempDir dir;
  llama::RandomModelConfig c = config256();
  llama::write_random_model(c, dir.file("in.gguf"));
  {
    // A key of each kind the model does not use survives too.
    gguf::Reader r(dir.file("in.gguf"));
    gguf::Writer w;
    w.metadata() = r.metadata();
    w.metadata().set("general.alignment", gguf::Value(uint32_t(64)));
    w.metadata().set("user.note", gguf::Value("kept"));
    for (const auto& t : r.tensors()) {
      auto bytes = r.tensor_data(t);
      w.add_tensor(t.name, t.shape, t.type,
                   std::vector<std::byte>(bytes.begin(), bytes.end()));
    }
    w.write(dir.file("in2.gguf"));
  }
  QuantizeOptions o;
  o.type = FileType::q4_k_m;
  llama::QuantizeResult res =
      llama::quantize_model(dir.file("in2.gguf"), dir.file("out.gguf"), o);
  gguf::Reader in(dir.file("in2.gguf")), out(dir.file("out.gguf"));
  EXPECT_EQ(out.metadata().get_int("general.file_type"), 15);
  EXPECT_EQ(out.metadata().get_int("general.quantization_version"), 2);
  EXPECT_EQ(out.alignment(), 64u);
  for (const auto& [key, value] : in.metadata().entries()) {
    if (key != "general.file_type") {
      EXPECT_EQ(out.metadata().at(key), value) << key;
    }
  }
  EXPECT_EQ(out.metadata().size(), in.metadata().size() + 1);
  ASSERT_EQ(out.tensors().size(), in.tensors().size());
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    EXPECT_EQ(out.tensors()[i].name, in.tensors()[i].name);
    EXPECT_EQ(out.tensors()[i].shape, in.tensors()[i].shape);
    EXPECT_EQ(out.tensors()[i].type, res.plan[i].to);
  }
  EXPECT_EQ(res.bytes_in,
            uint64_t(in.file_size() - in.data_offset()) -
                (in.file_size() - in.data_offset() - res.bytes_in));
  EXPECT_LT(res.bytes_out, res.bytes_in / 5);
  // In place: the output replaces the input atomically.
  o.type = FileType::q8_0;
  llama::quantize_model(dir.file("in2.gguf"), dir.file("in2.gguf"), o);
  EXPECT_EQ(gguf::Reader(dir.file("in2.gguf")).tensor("output.weight").type,
            QuantType::q8_0);
}

// Tensor infos of a llama model (no data: plan_quantization reads none).
struct FakeModel {
  gguf::Metadata m;
  std::vector<gguf::TensorInfo> tensors;
};

FakeModel fake_model(int n_layer, int64_t dim, int64_t n_head, int64_t n_kv,
                     bool tied = false) {
  FakeModel f;
  f.m.set("general.architecture", gguf::Value("llama"));
  f.m.set("llama.block_count", gguf::Value(uint32_t(n_layer)));
  f.m.set("llama.attention.head_count", gguf::Value(uint32_t(n_head)));
  f.m.set("llama.attention.head_count_kv", gguf::Value(uint32_t(n_kv)));
  auto add = [&](std::string name, std::vector<int64_t> shape) {
    f.tensors.push_back({std::move(name), std::move(shape), QuantType::f16});
  };
  int64_t kv = dim / n_head * n_kv;
  add("token_embd.weight", {1000, dim});
  // Layers in name order (blk.10 before blk.2), as some converters write:
  // the layer counters must still follow the layer numbers.
  std::vector<std::string> layers;
  for (int l = 0; l < n_layer; ++l) layers.push_back(std::to_string(l));
  std::sort(layers.begin(), layers.end());
  for (const std::string& l : layers) {
    add("blk." + l + ".attn_norm.weight", {dim});
    add("blk." + l + ".attn_q.weight", {dim, dim});
    add("blk." + l + ".attn_k.weight", {kv, dim});
    add("blk." + l + ".attn_v.weight", {kv, dim});
    add("blk." + l + ".attn_output.weight", {dim, dim});
    add("blk." + l + ".ffn_norm.weight", {dim});
    add("blk." + l + ".ffn_gate.weight", {3 * dim, dim});
    add("blk." + l + ".ffn_up.weight", {3 * dim, dim});
    add("blk." + l + ".ffn_down.weight", {dim, 3 * dim});
  }
  add("output_norm.weight", {dim});
  if (!tied) add("output.weight", {1000, dim});
  f.tensors.front().type = QuantType::f32;  // Inputs may mix float types.
  return f;
}

std::map<std::string, QuantType> plan_of(const FakeModel& f, FileType type) {
  QuantizeOptions o;
  o.type = type;
  std::map<std::string, QuantType> out;
  for (const auto& p : llama::plan_quantization(f.m, f.tensors, o)) {
    out[p.name] = p.to;
  }
  return out;
}

std::string blk(int l, const char* what) {
  return "blk." + std::to_string(l) + "." + what;
}

TEST(Quantize, MixesFollowLlamaCpp) {
  using Q = QuantType;
  FakeModel f = fake_model(16, 512, 8, 2);
  // use_more_bits(i, 16): i < 2, i >= 14, or (i - 2) % 3 == 2.
  const std::vector<int> more = {0, 1, 4, 7, 10, 13, 14, 15};
  auto is_more = [&](int l) {
    return std::find(more.begin(), more.end(), l) != more.end();
  };
  auto p = plan_of(f, FileType::q4_k_m);
  EXPECT_EQ(p["output.weight"], Q::q6_k);
  EXPECT_EQ(p["token_embd.weight"], Q::q4_k);
  EXPECT_EQ(p["output_norm.weight"], Q::f16);  // 1-D: left as it is.
  for (int l = 0; l < 16; ++l) {
    Q more_or_base = is_more(l) ? Q::q6_k : Q::q4_k;
    EXPECT_EQ(p[blk(l, "attn_v.weight")], more_or_base) << l;
    EXPECT_EQ(p[blk(l, "ffn_down.weight")], more_or_base) << l;
    EXPECT_EQ(p[blk(l, "attn_q.weight")], Q::q4_k);
    EXPECT_EQ(p[blk(l, "attn_k.weight")], Q::q4_k);
    EXPECT_EQ(p[blk(l, "attn_output.weight")], Q::q4_k);
    EXPECT_EQ(p[blk(l, "ffn_gate.weight")], Q::q4_k);
    EXPECT_EQ(p[blk(l, "ffn_up.weight")], Q::q4_k);
    EXPECT_EQ(p[blk(l, "attn_norm.weight")], Q::f16);
  }
  p = plan_of(f, FileType::q5_k_m);
  for (int l = 0; l < 16; ++l) {
    Q more_or_base = is_more(l) ? Q::q6_k : Q::q5_k;
    EXPECT_EQ(p[blk(l, "attn_v.weight")], more_or_base) << l;
    EXPECT_EQ(p[blk(l, "ffn_down.weight")], more_or_base) << l;
    EXPECT_EQ(p[blk(l, "ffn_up.weight")], Q::q5_k);
  }
  p = plan_of(f, FileType::q3_k_m);
  for (int l = 0; l < 16; ++l) {
    EXPECT_EQ(p[blk(l, "attn_v.weight")], l < 2 ? Q::q5_k : Q::q4_k) << l;
    EXPECT_EQ(p[blk(l, "ffn_down.weight")], l < 1 ? Q::q5_k : Q::q4_k) << l;
    EXPECT_EQ(p[blk(l, "attn_output.weight")], Q::q4_k);
    EXPECT_EQ(p[blk(l, "attn_q.weight")], Q::q3_k);
  }
  EXPECT_EQ(p["output.weight"], Q::q6_k);
  p = plan_of(f, FileType::q4_k_s);
  for (int l = 0; l < 16; ++l) {
    EXPECT_EQ(p[blk(l, "attn_v.weight")], l < 4 ? Q::q5_k : Q::q4_k) << l;
    EXPECT_EQ(p[blk(l, "ffn_down.weight")], l < 2 ? Q::q5_k : Q::q4_k) << l;
  }
  p = plan_of(f, FileType::q2_k);  // n_gqa 4: attn_v in q4_K.
  EXPECT_EQ(p[blk(3, "attn_v.weight")], Q::q4_k);
  EXPECT_EQ(p[blk(3, "ffn_down.weight")], Q::q3_k);
  EXPECT_EQ(p[blk(3, "attn_output.weight")], Q::q3_k);
  EXPECT_EQ(p[blk(3, "ffn_up.weight")], Q::q2_k);
  p = plan_of(fake_model(4, 512, 8, 4), FileType::q2_k);  // n_gqa 2.
  EXPECT_EQ(p[blk(3, "attn_v.weight")], Q::q3_k);
  // Legacy types: output in q6_K too, but not for q8_0.
  p = plan_of(f, FileType::q4_0);
  EXPECT_EQ(p["output.weight"], Q::q6_k);
  EXPECT_EQ(p[blk(5, "attn_v.weight")], Q::q4_0);
  p = plan_of(f, FileType::q8_0);
  EXPECT_EQ(p["output.weight"], Q::q8_0);
  // Float targets: every matrix converted, no mix.
  p = plan_of(f, FileType::all_f32);
  EXPECT_EQ(p["output.weight"], Q::f32);
  EXPECT_EQ(p["token_embd.weight"], Q::f32);
}

TEST(Quantize, TiedEmbeddingIsTreatedAsTheOutput) {
  auto p = plan_of(fake_model(2, 512, 8, 2, true), FileType::q4_k_m);
  EXPECT_EQ(p["token_embd.weight"], QuantType::q6_k);
  EXPECT_EQ(p.count("output.weight"), 0u);
}

TEST(Quantize, RowsThatAreNotWholeBlocksFallBack) {
  FakeModel f = fake_model(8, 96, 6, 2);  // 96: no k-quant blocks.
  QuantizeOptions o;
  o.type = FileType::q4_k_m;
  for (const auto& p : llama::plan_quantization(f.m, f.tensors, o)) {
    if (p.shape.size() == 1) continue;
    // use_more_bits(i, 8) holds for layers 0, 3, 6 and 7: q6_K there,
    // whose fallback is q8_0; q4_K falls back to q5_0. The output's rule
    // picks q8_0 itself (no fallback).
    bool more = false;
    for (int l : {0, 3, 6, 7}) {
      more |= p.name == blk(l, "attn_v.weight") ||
              p.name == blk(l, "ffn_down.weight");
    }
    QuantType want =
        p.name == "output.weight" || more ? QuantType::q8_0 : QuantType::q5_0;
    EXPECT_EQ(p.to, want) << p.name;
    EXPECT_EQ(p.fallback, p.name != "output.weight") << p.name;
  }
  // q2_K and q3_K fall back to q4_0 (llama.cpp 0.3.36; older versions
  // took iq4_nl).
  o.type = FileType::q2_k;
  for (const auto& p : llama::plan_quantization(f.m, f.tensors, o)) {
    if (p.shape.size() == 1) continue;
    // attn_v, ffn_down and attn_output take q3_K in the mix: q4_0 too.
    EXPECT_EQ(p.to,
              p.name == "output.weight" ? QuantType::q8_0 : QuantType::q4_0)
        << p.name;
  }
  // --pure: no mix, but the same fallbacks.
  o.type = FileType::q4_k_m;
  o.pure = true;
  for (const auto& p : llama::plan_quantization(f.m, f.tensors, o)) {
    if (p.shape.size() == 1) continue;
    EXPECT_EQ(p.to, QuantType::q5_0) << p.name;
    EXPECT_TRUE(p.fallback) << p.name;
  }
  // Rows of 80: not whole 32-value blocks either, so f16.
  FakeModel g = fake_model(2, 80, 5, 1);
  o.type = FileType::q4_0;
  o.pure = false;
  for (const auto& p : llama::plan_quantization(g.m, g.tensors, o)) {
    if (p.shape.size() == 1) continue;
    EXPECT_EQ(p.to, QuantType::f16) << p.name;
  }
  // A type asked for by name gets no fallback: an error naming it.
  o.token_embedding_type = QuantType::q4_k;
  expect_error<ValueError>([&] { llama::plan_quantization(f.m, f.tensors, o); },
                           {"token_embd.weight", "96", "q4_K"});
}

TEST(Quantize, Errors) {
  testing::TempDir dir;
  QuantizeOptions o;
  o.type = FileType::q4_0;
  expect_error<IoError>(
      [&] {
        llama::quantize_model(dir.file("absent.gguf"), dir.file("o.gguf"), o);
      },
      {"absent.gguf"});
  testing::write_text(dir.file("text.gguf"), "not a gguf file at all");
  expect_error<FormatError>(
      [&] {
        llama::quantize_model(dir.file("text.gguf"), dir.file("o.gguf"), o);
      },
      {"text.gguf"});
  // A model without llama.block_count.
  gguf::Writer w;
  w.metadata().set("general.architecture", gguf::Value("llama"));
  w.add_tensor("output.weight", {32, 32}, QuantType::f32,
               std::vector<std::byte>(32 * 32 * 4));
  w.write(dir.file("nometa.gguf"));
  expect_error<FormatError>(
      [&] {
        llama::quantize_model(dir.file("nometa.gguf"), dir.file("o.gguf"), o);
      },
      {"llama.block_count"});
  // Requantizing needs the flag.
  llama::RandomModelConfig c = config256();
  c.type = QuantType::q8_0;
  llama::write_random_model(c, dir.file("q8.gguf"));
  expect_error<ValueError>(
      [&] {
        llama::quantize_model(dir.file("q8.gguf"), dir.file("o.gguf"), o);
      },
      {"output.weight", "q8_0", "--allow-requantize"});
  o.allow_requantize = true;
  llama::quantize_model(dir.file("q8.gguf"), dir.file("o.gguf"), o);
  EXPECT_EQ(gguf::Reader(dir.file("o.gguf")).tensor("blk.0.attn_q.weight").type,
            QuantType::q4_0);
  // Nothing but the inputs and the one good output was left behind.
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"nometa.gguf", "o.gguf",
                                                     "q8.gguf", "text.gguf"}));
}

}  // namespace
}  // namespace nascent::test
