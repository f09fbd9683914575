#include "tests/models/llama/test_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "nascent/io/gguf_reader.h"
#include "nascent/io/gguf_writer.h"
#include "nascent/quant/codec.h"

namespace nascent::test {

namespace {

using Vec = std::vector<double>;
using gguf::Value;

bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

struct Builder {
  const ModelSpec& spec;
  gguf::Writer& w;
  std::mt19937_64 rng;

  void add(const std::string& name, int64_t rows, int64_t cols, double scale,
           double mean, QuantType type) {
    if (listed(spec.omit, name)) return;
    if (listed(spec.misshape, name)) ++rows;
    std::normal_distribution<float> dist{float(mean), float(scale)};
    std::vector<float> values(size_t(rows * cols));
    for (float& v : values) v = dist(rng);
    const size_t row = row_bytes(type, cols);
    std::vector<std::byte> bytes(row * size_t(rows));
    for (int64_t r = 0; r < rows; ++r) {
      quant::quantize_row(type, values.data() + r * cols,
                          bytes.data() + r * row, cols);
    }
    w.add_tensor(name, {rows, cols}, type, std::move(bytes));
  }
  void matrix(const std::string& name, int64_t rows, int64_t cols) {
    add(name, rows, cols, 1.0 / std::sqrt(double(cols)), 0.0, spec.type);
  }
  void vector(const std::string& name, int64_t n, double mean = 1.0,
              double scale = 0.1) {
    if (listed(spec.omit, name)) return;
    const int64_t len = listed(spec.misshape, name) ? n + 1 : n;
    std::normal_distribution<float> dist{float(mean), float(scale)};
    std::vector<std::byte> bytes(size_t(len) * 4);
    for (int64_t i = 0; i < len; ++i) {
      const float v = dist(rng);
      std::memcpy(bytes.data() + i * 4, &v, 4);
    }
    w.add_tensor(name, {len}, QuantType::f32, std::move(bytes));
  }
};

}  // namespace

void write_model(const ModelSpec& s, const std::string& path) {
  gguf::Writer w;
  gguf::Metadata& m = w.metadata();
  const std::string a = s.arch + ".";
  const int64_t hd = s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head;
  m.set("general.architecture", Value(s.arch));
  m.set(a + "context_length", Value(uint32_t(s.n_ctx_train)));
  m.set(a + "embedding_length", Value(uint32_t(s.n_embd)));
  m.set(a + "block_count", Value(uint32_t(s.n_layer)));
  m.set(a + "feed_forward_length", Value(uint32_t(s.n_ff)));
  m.set(a + "attention.head_count", Value(uint32_t(s.n_head)));
  m.set(a + "attention.head_count_kv", Value(uint32_t(s.n_head_kv)));
  m.set(a + "attention.layer_norm_rms_epsilon", Value(s.rms_eps));
  m.set(a + "rope.freq_base", Value(s.rope_base));
  if (s.head_dim > 0) {
    m.set(a + "attention.key_length", Value(uint32_t(hd)));
    m.set(a + "attention.value_length", Value(uint32_t(hd)));
  }
  if (s.rope_dim > 0) {
    m.set(a + "rope.dimension_count", Value(uint32_t(s.rope_dim)));
  }
  if (s.rope_scale > 0) {
    m.set(a + "rope.scaling.type", Value("linear"));
    m.set(a + "rope.scaling.factor", Value(s.rope_scale));
  }
  for (const auto& [key, value] : s.extra.entries()) m.set(key, value);

  Builder b{s, w, std::mt19937_64(s.seed)};
  const int64_t d = s.n_embd, q = s.n_head * hd, kv = s.n_head_kv * hd;
  b.add("token_embd.weight", s.n_vocab, d, 1.0, 0.0, s.type);
  b.vector("output_norm.weight", d);
  if (!s.tied) b.matrix("output.weight", s.n_vocab, d);
  if (s.rope_freqs) {
    const int64_t rd = s.rope_dim > 0 ? s.rope_dim : hd;
    b.vector("rope_freqs.weight", rd / 2, 2.0, 0.5);
  }
  for (int64_t l = 0; l < s.n_layer; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    b.vector(p + "attn_norm.weight", d);
    b.matrix(p + "attn_q.weight", q, d);
    b.matrix(p + "attn_k.weight", kv, d);
    b.matrix(p + "attn_v.weight", kv, d);
    if (s.arch == "qwen2") {
      b.vector(p + "attn_q.bias", q, 0.0, 0.5);
      b.vector(p + "attn_k.bias", kv, 0.0, 0.5);
      b.vector(p + "attn_v.bias", kv, 0.0, 0.5);
    }
    b.matrix(p + "attn_output.weight", d, q);
    b.vector(p + "ffn_norm.weight", d);
    b.matrix(p + "ffn_gate.weight", s.n_ff, d);
    b.matrix(p + "ffn_up.weight", s.n_ff, d);
    b.matrix(p + "ffn_down.weight", d, s.n_ff);
  }
  w.write(path);
}

namespace {

// A tensor of the file as float64, rows of `cols`.
Vec load(const gguf::Reader& f, const std::string& name) {
  const gguf::TensorInfo& info = f.tensor(name);
  const int64_t cols = info.shape.back();
  const int64_t rows = info.numel() / cols;
  std::vector<float> v(size_t(info.numel()));
  const auto* src =
      reinterpret_cast<const uint8_t*>(f.tensor_data(info).data());
  const size_t row = row_bytes(info.type, cols);
  for (int64_t r = 0; r < rows; ++r) {
    quant::dequantize_row(info.type, src + size_t(r) * row, v.data() + r * cols,
                          cols);
  }
  return Vec(v.begin(), v.end());
}

// y = W x for W [rows, x.size()].
Vec matvec(const Vec& w, const Vec& x) {
  const size_t cols = x.size(), rows = w.size() / cols;
  Vec y(rows, 0.0);
  for (size_t r = 0; r < rows; ++r) {
    double s = 0.0;
    for (size_t c = 0; c < cols; ++c) s += w[r * cols + c] * x[c];
    y[r] = s;
  }
  return y;
}

Vec rms_norm(const Vec& x, const Vec& w, double eps) {
  double ss = 0.0;
  for (double v : x) ss += v * v;
  const double r = 1.0 / std::sqrt(ss / double(x.size()) + eps);
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * r * w[i];
  return y;
}

}  // namespace

std::vector<std::vector<double>> reference_logits(
    const std::string& path, const std::vector<int32_t>& tokens) {
  const gguf::Reader f(path);
  const gguf::Metadata& md = f.metadata();
  const std::string arch = md.get_string("general.architecture");
  const std::string a = arch + ".";
  const int64_t d = md.get_int(a + "embedding_length");
  const int64_t n_layer = md.get_int(a + "block_count");
  const int64_t n_head = md.get_int(a + "attention.head_count");
  const int64_t n_kv = md.get_int(a + "attention.head_count_kv");
  const int64_t hd =
      md.find_int(a + "attention.key_length").value_or(d / n_head);
  const int64_t rope_dim = md.find_int(a + "rope.dimension_count").value_or(hd);
  const double eps = md.get_double(a + "attention.layer_norm_rms_epsilon");
  const double base = md.get_double(a + "rope.freq_base");
  const double scale = md.find_double(a + "rope.scaling.factor").value_or(1.0);
  const bool neox = arch == "qwen2";
  const Vec ff = f.find_tensor("rope_freqs.weight")
                     ? load(f, "rope_freqs.weight")
                     : Vec(size_t(rope_dim / 2), 1.0);
  const size_t n = tokens.size();

  // Rotates one head's vector for position pos.
  auto rope = [&](double* v, double pos) {
    for (int64_t i = 0; i < rope_dim / 2; ++i) {
      const double theta = pos / scale *
                           std::pow(base, -2.0 * double(i) / double(rope_dim)) /
                           ff[size_t(i)];
      const int64_t i0 = neox ? i : 2 * i,
                    i1 = neox ? i + rope_dim / 2 : 2 * i + 1;
      const double x0 = v[i0], x1 = v[i1];
      v[i0] = x0 * std::cos(theta) - x1 * std::sin(theta);
      v[i1] = x0 * std::sin(theta) + x1 * std::cos(theta);
    }
  };

  const Vec embd = load(f, "token_embd.weight");
  std::vector<Vec> x(n);
  for (size_t t = 0; t < n; ++t) {
    x[t].assign(embd.begin() + tokens[t] * d,
                embd.begin() + (tokens[t] + 1) * d);
  }
  for (int64_t l = 0; l < n_layer; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    const Vec wq = load(f, p + "attn_q.weight"),
              wk = load(f, p + "attn_k.weight"),
              wv = load(f, p + "attn_v.weight"),
              wo = load(f, p + "attn_output.weight"),
              an = load(f, p + "attn_norm.weight"),
              fn = load(f, p + "ffn_norm.weight"),
              wg = load(f, p + "ffn_gate.weight"),
              wu = load(f, p + "ffn_up.weight"),
              wd = load(f, p + "ffn_down.weight");
    const bool bias = f.find_tensor(p + "attn_q.bias") != nullptr;
    const Vec bq = bias ? load(f, p + "attn_q.bias") : Vec();
    const Vec bk = bias ? load(f, p + "attn_k.bias") : Vec();
    const Vec bv = bias ? load(f, p + "attn_v.bias") : Vec();
    std::vector<Vec> q(n), k(n), v(n);
    for (size_t t = 0; t < n; ++t) {
      const Vec h = rms_norm(x[t], an, eps);
      q[t] = matvec(wq, h);
      k[t] = matvec(wk, h);
      v[t] = matvec(wv, h);
      if (bias) {
        for (size_t i = 0; i < q[t].size(); ++i) q[t][i] += bq[i];
        for (size_t i = 0; i < k[t].size(); ++i) k[t][i] += bk[i];
        for (size_t i = 0; i < v[t].size(); ++i) v[t][i] += bv[i];
      }
      for (int64_t h2 = 0; h2 < n_head; ++h2)
        rope(&q[t][size_t(h2 * hd)], double(t));
      for (int64_t h2 = 0; h2 < n_kv; ++h2)
        rope(&k[t][size_t(h2 * hd)], double(t));
    }
    for (size_t t = 0; t < n; ++t) {
      Vec o(size_t(n_head * hd), 0.0);
      for (int64_t h2 = 0; h2 < n_head; ++h2) {
        const int64_t kh = h2 / (n_head / n_kv);
        Vec s(t + 1);
        double mx = -1e300;
        for (size_t j = 0; j <= t; ++j) {
          double dot = 0.0;
          for (int64_t i = 0; i < hd; ++i) {
            dot += q[t][size_t(h2 * hd + i)] * k[j][size_t(kh * hd + i)];
          }
          s[j] = dot / std::sqrt(double(hd));
          mx = std::max(mx, s[j]);
        }
        double sum = 0.0;
        for (double& e : s) sum += (e = std::exp(e - mx));
        for (size_t j = 0; j <= t; ++j) {
          for (int64_t i = 0; i < hd; ++i) {
            o[size_t(h2 * hd + i)] += s[j] / sum * v[j][size_t(kh * hd + i)];
          }
        }
      }
      const Vec ao = matvec(wo, o);
      for (size_t i = 0; i < size_t(d); ++i) x[t][i] += ao[i];
      const Vec h = rms_norm(x[t], fn, eps);
      const Vec g = matvec(wg, h), u = matvec(wu, h);
      Vec act(g.size());
      for (size_t i = 0; i < g.size(); ++i) {
        act[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      }
      const Vec down = matvec(wd, act);
      for (size_t i = 0; i < size_t(d); ++i) x[t][i] += down[i];
    }
  }
  const Vec out_norm = load(f, "output_norm.weight");
  const Vec out = load(f, f.find_tensor("output.weight") ? "output.weight"
                                                         : "token_embd.weight");
  std::vector<Vec> logits(n);
  for (size_t t = 0; t < n; ++t) {
    logits[t] = matvec(out, rms_norm(x[t], out_norm, eps));
  }
  return logits;
}

gguf::Metadata byte_vocab(const std::vector<std::string>& pieces) {
  std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
  std::vector<float> scores{0, 0, 0};
  std::vector<int32_t> types{2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(fmt::format("<0x{:02X}>", b));
    scores.push_back(0);
    types.push_back(6);
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    tokens.push_back(pieces[i]);
    scores.push_back(-float(i));
    types.push_back(1);
  }
  gguf::Metadata m;
  m.set("tokenizer.ggml.model", Value("llama"));
  m.set("tokenizer.ggml.tokens", Value::array(tokens));
  m.set("tokenizer.ggml.scores", Value::array(scores));
  m.set("tokenizer.ggml.token_type", Value::array(types));
  m.set("tokenizer.ggml.bos_token_id", Value(uint32_t(1)));
  m.set("tokenizer.ggml.eos_token_id", Value(uint32_t(2)));
  m.set("tokenizer.ggml.unknown_token_id", Value(uint32_t(0)));
  return m;
}

}  // namespace nascent::test
