// Writes the fuzzers' seed corpora with the project's own writers:
//   make_seeds OUT_DIR   ->  OUT_DIR/<target>/<name> for every target
// GGUF files from gguf::Writer (every metadata type, nested arrays, tensors
// of several quant types, a small random LLaMA model), tokenizer vocabularies
// of both models and the three pre-tokenizers, safetensors of every dtype
// and layout, checkpoints from save_checkpoint, IDX files (plain and
// gzipped), and texts for the tokenizers.
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fuzz/seed_model.h"
#include "nascent/core/quant.h"
#include "nascent/io/file.h"
#include "nascent/io/gguf_writer.h"
#include "nascent/io/safetensors.h"
#include "nascent/models/llama/random_model.h"
#include "nascent/train/checkpoint.h"

namespace fs = std::filesystem;
using namespace nascent;

namespace {

std::string out_dir;

std::string seed_path(const std::string& target, const std::string& name) {
  fs::create_directories(out_dir + "/" + target);
  return out_dir + "/" + target + "/" + name;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw IoError("make_seeds: cannot write " + path);
}

void write_gguf(const gguf::Writer& w, const std::string& name) {
  w.write(seed_path("gguf", name));
}

// Valid rows of `type`: f32 values quantized by the project's codec.
std::vector<std::byte> rows_of(QuantType type, int64_t rows, int64_t cols) {
  Tensor x = randn({rows, cols}, default_backend(), 3);
  std::vector<uint8_t> u = quantize(x, type).to_vector<uint8_t>();
  auto b = std::as_bytes(std::span(u));
  return {b.begin(), b.end()};
}

void gguf_seeds() {
  gguf::Writer every;
  gguf::Metadata& m = every.metadata();
  m.set("general.architecture", gguf::Value("llama"));
  m.set("u8", gguf::Value(uint8_t(7)));
  m.set("i8", gguf::Value(int8_t(-7)));
  m.set("u16", gguf::Value(uint16_t(700)));
  m.set("i16", gguf::Value(int16_t(-700)));
  m.set("u32", gguf::Value(uint32_t(70000)));
  m.set("i32", gguf::Value(int32_t(-70000)));
  m.set("u64", gguf::Value(uint64_t(1) << 40));
  m.set("i64", gguf::Value(-(int64_t(1) << 40)));
  m.set("f32", gguf::Value(1.5f));
  m.set("f64", gguf::Value(-2.25));
  m.set("bool", gguf::Value(true));
  m.set("str", gguf::Value("caf\xc3\xa9"));
  m.set("arr.i32", gguf::Value::array(std::vector<int32_t>{1, -2, 3}));
  m.set("arr.str", gguf::Value::array(std::vector<std::string>{"a", "", "bc"}));
  m.set("arr.nested", gguf::Value::array(std::vector<gguf::Value>{
                          gguf::Value::array(std::vector<float>{1.0f, 2.0f}),
                          gguf::Value::array(std::vector<std::string>{"x"})}));
  every.add_tensor("f32", {2, 3}, QuantType::f32,
                   rows_of(QuantType::f32, 2, 3));
  every.add_tensor("f16", {3}, QuantType::f16, rows_of(QuantType::f16, 1, 3));
  every.add_tensor("q8_0", {2, 32}, QuantType::q8_0,
                   rows_of(QuantType::q8_0, 2, 32));
  every.add_tensor("q4_k", {256}, QuantType::q4_k,
                   rows_of(QuantType::q4_k, 1, 256));
  write_gguf(every, "every_type.gguf");

  gguf::Writer aligned;
  aligned.metadata().set("general.alignment", gguf::Value(uint32_t(64)));
  aligned.add_tensor("a", {4, 4, 2, 1}, QuantType::bf16,
                     rows_of(QuantType::bf16, 32, 1));
  aligned.add_tensor("b", {32}, QuantType::q5_1,
                     rows_of(QuantType::q5_1, 1, 32));
  write_gguf(aligned, "aligned_4d.gguf");
  write_gguf(gguf::Writer(), "empty.gguf");

  llama::RandomModelConfig c;
  c.n_embd = 32;
  c.n_layer = 1;
  c.n_head = 2;
  c.n_head_kv = 1;
  c.n_ff = 64;
  c.n_vocab = 300;
  c.type = QuantType::q8_0;
  llama::write_random_model(c, seed_path("gguf", "tiny_llama_q8_0.gguf"));
}

// Byte-level BPE vocabulary: the 256 byte characters, a few merges and
// control tokens, for one pre-tokenizer.
gguf::Metadata bpe_vocab(const std::string& pre) {
  gguf::Metadata m;
  std::vector<std::string> tokens;
  int shifted = 0;
  for (int b = 0; b < 256; ++b) {
    // GPT-2's printable alphabet: bytes outside it move to U+0100 onwards.
    bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) ||
                     (b >= 0xae && b <= 0xff);
    uint32_t cp = printable ? uint32_t(b) : uint32_t(0x100 + shifted++);
    std::string s;
    if (cp < 0x80) {
      s += char(cp);
    } else {
      s += char(0xc0 | (cp >> 6));
      s += char(0x80 | (cp & 0x3f));
    }
    tokens.push_back(s);
  }
  std::vector<std::string> merges = {"\xc4\xa0 t", "h e",  "\xc4\xa0t he",
                                     "l l",        "ll o", "1 2"};
  for (const char* t : {"\xc4\xa0t", "he", "\xc4\xa0the", "ll", "llo", "12"}) {
    tokens.push_back(t);
  }
  std::vector<int32_t> types(tokens.size(), 1);
  for (const char* t : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    tokens.push_back(t);
    types.push_back(3);
  }
  m.set("tokenizer.ggml.model", gguf::Value("gpt2"));
  m.set("tokenizer.ggml.pre", gguf::Value(pre));
  m.set("tokenizer.ggml.tokens", gguf::Value::array(tokens));
  m.set("tokenizer.ggml.token_type", gguf::Value::array(types));
  m.set("tokenizer.ggml.merges", gguf::Value::array(merges));
  m.set("tokenizer.ggml.bos_token_id",
        gguf::Value(uint32_t(tokens.size() - 3)));
  m.set("tokenizer.ggml.eos_token_id",
        gguf::Value(uint32_t(tokens.size() - 1)));
  m.set("tokenizer.chat_template",
        gguf::Value("{% for m in messages %}<|im_start|>{% endfor %}"));
  return m;
}

void tokenizer_seeds() {
  for (const char* pre : {"gpt-2", "llama-bpe", "qwen2"}) {
    gguf::Writer w;
    w.metadata() = bpe_vocab(pre);
    w.write(seed_path("gguf_tokenizer", fmt::format("bpe_{}.gguf", pre)));
  }
  gguf::Writer spm;
  spm.metadata() = llama::synthetic_spm_vocab(300);
  spm.metadata().set("tokenizer.ggml.add_bos_token", gguf::Value(true));
  spm.write(seed_path("gguf_tokenizer", "spm_300.gguf"));

  // tokenizer_text: the first byte picks the vocabulary (bit 7: special
  // tokens added and parsed).
  const std::vector<std::string> texts = {
      "Hello world",
      "  leading spaces\n\nand lines\t\ttabs",
      "caf\xc3\xa9 na\xc3\xafve \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80",
      "numbers 1234567 3.14 -0",
      "I'm you're they'll DON'T",
      "<s> </s> <|im_start|>user\nhi<|im_end|>",
      "\xff\xfe\xc3 broken"};
  for (size_t v = 0; v < 4; ++v) {
    for (size_t i = 0; i < texts.size(); ++i) {
      char lead = char(v | (i % 2 ? 0x80 : 0));
      write_file(seed_path("tokenizer_text", fmt::format("v{}_{}.txt", v, i)),
                 lead + texts[i]);
    }
  }
}

void safetensors_seeds() {
  Backend& b = default_backend();
  std::map<std::string, Tensor> every;
  every["f32"] = randn({2, 3}, b, 1);
  every["f64"] = randn({3}, b, 2).cast(DType::f64);
  every["f16"] = randn({2, 2}, b, 3).cast(DType::f16);
  every["bf16"] = randn({1, 2, 2}, b, 4).cast(DType::bf16);
  every["i32"] = arange(int64_t(4), b, DType::i32);
  every["i64"] = arange(int64_t(3), b, DType::i64);
  every["u8"] = arange(int64_t(5), b, DType::u8);
  every["bool"] = gt(arange(int64_t(4), b, DType::i32), 1.0);
  every["scalar"] = full({}, 2.5, b);
  every["empty"] = zeros({0, 3}, b);
  every["strided"] = randn({3, 4}, b, 5).transpose();
  io::save_safetensors(seed_path("safetensors", "every_dtype.safetensors"),
                       every, {{"format", "pt"}, {"note", "seed"}});
  io::save_safetensors(seed_path("safetensors", "empty.safetensors"), {});
}

void checkpoint_seeds() {
  fuzz::SeedModel a;
  train::save_checkpoint(seed_path("checkpoint", "model_only.safetensors"),
                         a.net, nullptr, {{"epoch", 0}});
  a.step();
  train::save_checkpoint(seed_path("checkpoint", "adam.safetensors"), a.net,
                         a.optimizer.get(),
                         {{"epoch", 1}, {"step", 3}, {"seed", 1}});
}

std::string idx_file(uint8_t type, const std::vector<uint32_t>& dims,
                     size_t itemsize) {
  std::string out = {0, 0, char(type), char(dims.size())};
  size_t n = 1;
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) out += char(d >> s);
    n *= d;
  }
  for (size_t i = 0; i < n * itemsize; ++i) out += char(i * 37 + 1);
  return out;
}

void idx_seeds() {
  write_file(seed_path("idx", "u8_2x3.idx"), idx_file(0x08, {2, 3}, 1));
  write_file(seed_path("idx", "i32_3.idx"), idx_file(0x0C, {3}, 4));
  write_file(seed_path("idx", "f32_1x2x2.idx"), idx_file(0x0D, {1, 2, 2}, 4));
  write_file(seed_path("idx", "f64_2.idx"), idx_file(0x0E, {2}, 8));
  write_file(seed_path("idx", "u8_empty.idx"), idx_file(0x08, {4, 0}, 1));
  // Gzipped, as Fashion-MNIST ships.
  std::string plain = idx_file(0x08, {3, 4, 4}, 1);
  std::string path = seed_path("idx", "u8_3x4x4.idx.gz");
  gzFile gz = gzopen(path.c_str(), "wb9");
  if (!gz || gzwrite(gz, plain.data(), unsigned(plain.size())) <= 0 ||
      gzclose(gz) != Z_OK) {
    throw IoError("make_seeds: cannot write " + path);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: make_seeds OUT_DIR\n");
    return 2;
  }
  out_dir = argv[1];
  try {
    gguf_seeds();
    tokenizer_seeds();
    safetensors_seeds();
    checkpoint_seeds();
    idx_seeds();
  } catch (const std::exception& e) {
    fmt::print(stderr, "make_seeds: {}\n", e.what());
    return 1;
  }
  return 0;
}
