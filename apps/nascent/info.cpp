// `nascent info model.gguf`: a GGUF file's header, metadata, tokenizer and
// tensors (name, type, shape, bytes, offset), with totals per type.
#include <map>
#include <memory>

#include <fmt/format.h>

#include "apps/nascent/command.h"
#include "nascent/core/error.h"
#include "nascent/core/shape.h"
#include "nascent/generate/chat_template.h"
#include "nascent/io/gguf_reader.h"
#include "nascent/tokenizer/tokenizer.h"

namespace {

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(n);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return u == 0 ? fmt::format("{} B", n)
                : fmt::format("{:.2f} {}", v, units[u]);
}

std::string type_of(const nascent::gguf::Value& v) {
  using nascent::gguf::name;
  if (!v.is_array()) return std::string(name(v.type()));
  return fmt::format("[{}; {}]", name(v.element_type()), v.array_size());
}

void print_tokenizer(const nascent::gguf::Metadata& m) {
  using namespace nascent;
  if (!m.contains("tokenizer.ggml.model")) return;
  try {
    tokenizer::Tokenizer t = tokenizer::Tokenizer::from_gguf(m);
    auto id = [&](tokenizer::TokenId i) {
      return i == tokenizer::kNoToken
                 ? std::string("none")
                 : fmt::format("{} '{}'", i, t.token_text(i));
    };
    fmt::print("\ntokenizer: {}, {} tokens, BOS {}, EOS {}, EOT {}{}\n",
               t.model() == tokenizer::TokenizerModel::spm
                   ? "SentencePiece (llama)"
                   : "byte-level BPE (gpt2)",
               t.size(), id(t.bos()), id(t.eos()), id(t.eot()),
               t.add_bos() ? ", adds BOS" : "");
    const std::string& tmpl = t.chat_template();
    if (tmpl.empty()) {
      fmt::print("chat template: none (give chat --chat-template)\n");
    } else {
      try {
        const generate::ChatTemplate ct = generate::ChatTemplate::for_model(t);
        std::vector<std::string> eot;
        for (tokenizer::TokenId i : ct.end_of_turn_tokens(t))
          eot.push_back(id(i));
        fmt::print("chat template: Jinja, {} bytes, end of turn {}\n",
                   tmpl.size(),
                   eot.empty() ? std::string("EOS only")
                               : fmt::format("{}", fmt::join(eot, ", ")));
      } catch (const Error& e) {
        fmt::print("chat template: {} bytes, cannot be parsed: {}\n",
                   tmpl.size(), e.what());
      }
    }
  } catch (const Error& e) {
    fmt::print("\ntokenizer: cannot be built: {}\n", e.what());
  }
}

int info(const std::string& path, int max_items) {
  using namespace nascent;
  gguf::Reader r(path);
  size_t items = max_items == 0 ? SIZE_MAX : size_t(max_items);
  fmt::print("{}: GGUF v{}, {}, alignment {}", path, r.version(),
             human_bytes(r.file_size()), r.alignment());
  if (r.tensors().empty()) {
    fmt::print(", no tensor data\n");
  } else {
    fmt::print(", tensor data at offset {}\n", r.data_offset());
  }
  const gguf::Metadata& m = r.metadata();
  fmt::print("\nmetadata ({} keys):\n", m.size());
  size_t key_width = 0;
  for (const auto& [key, value] : m.entries()) {
    key_width = std::max(key_width, key.size());
  }
  for (const auto& [key, value] : m.entries()) {
    fmt::print("  {:<{}}  {:<16} {}\n", key, key_width, type_of(value),
               value.to_string(items));
  }
  print_tokenizer(m);

  const auto& tensors = r.tensors();
  uint64_t total_bytes = 0;
  int64_t total_params = 0;
  size_t name_width = 4;
  std::map<std::string, std::pair<int, uint64_t>> by_type;
  for (const auto& t : tensors) {
    total_bytes += t.size;
    total_params += t.numel();
    name_width = std::max(name_width, t.name.size());
    auto& [count, bytes] = by_type[std::string(name(t.type))];
    ++count;
    bytes += t.size;
  }
  fmt::print("\ntensors ({}, {} parameters, {}):\n", tensors.size(),
             total_params, human_bytes(total_bytes));
  if (tensors.empty()) return 0;
  fmt::print("  {:>5}  {:<{}}  {:<7} {:<24} {:>12} {:>14}\n", "#", "name",
             name_width, "type", "shape", "bytes", "offset");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    fmt::print("  {:>5}  {:<{}}  {:<7} {:<24} {:>12} {:>14}\n", i, t.name,
               name_width, name(t.type), to_string(t.shape), t.size,
               r.data_offset() + t.offset);
  }
  fmt::print("\nby type:\n");
  for (const auto& [type, stat] : by_type) {
    fmt::print("  {:<7} {:>5} tensors  {:>12}\n", type, stat.first,
               human_bytes(stat.second));
  }
  return 0;
}

}  // namespace

NASCENT_COMMAND("info", "show a GGUF file's metadata, tokenizer and tensors",
                [](CLI::App& sub) -> std::function<int()> {
                  auto path = std::make_shared<std::string>();
                  auto items = std::make_shared<int>(8);
                  sub.add_option("model", *path, "the GGUF file")
                      ->required()
                      ->check(CLI::ExistingFile);
                  sub.add_option("-n,--max-items", *items,
                                 "array elements to show (0: all; default 8)")
                      ->check(CLI::Range(0, 1 << 30));
                  return [=] { return info(*path, *items); };
                });
