// llama.cpp's tokenizer test vectors (../shared/data/tokenizer/*.inp/.out):
// every input must encode to exactly the ids llama.cpp gives (no BOS, no
// special-token parsing), and the pieces must give the input back.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "nascent/io/gguf_reader.h"
#include "nascent/tokenizer/tokenizer.h"
#include "tests/shared_data.h"

namespace nascent::test {
namespace {

struct Case {
  std::string text;
  std::vector<tokenizer::TokenId> ids;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// .inp: inputs separated by "\n__ggml_vocab_test__\n"; .out: one line of
// space-separated ids per input.
std::vector<Case> read_cases(const std::string& gguf_path) {
  std::string inp = read_file(gguf_path + ".inp");
  std::string out = read_file(gguf_path + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  size_t pos = 0;
  while (true) {
    size_t hit = inp.find(sep, pos);
    if (hit == std::string::npos) break;
    texts.push_back(inp.substr(pos, hit - pos));
    pos = hit + sep.size();
  }
  std::vector<Case> cases;
  std::istringstream lines(out);
  std::string line;
  for (const std::string& text : texts) {
    EXPECT_TRUE(std::getline(lines, line)) << "missing .out line";
    std::istringstream ids(line);
    Case c{text, {}};
    tokenizer::TokenId id;
    while (ids >> id) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  return cases;
}

std::string show(const std::string& text) {
  std::string s;
  for (char c : text) {
    if (c == '\n') {
      s += "\\n";
    } else if (c == '\t') {
      s += "\\t";
    } else {
      s += c;
    }
  }
  return "\"" + s + "\"";
}

void check_vectors(const std::string& path, size_t expected_cases) {
  tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf_file(path);
  std::vector<Case> cases = read_cases(path);
  ASSERT_EQ(cases.size(), expected_cases);
  int failures = 0;
  for (const Case& c : cases) {
    std::vector<tokenizer::TokenId> ids = tok.encode(c.text, false, false);
    EXPECT_EQ(ids, c.ids) << "input " << show(c.text);
    failures += ids != c.ids;
    // The pieces hold the input's bytes (space prefix aside).
    std::string joined;
    for (tokenizer::TokenId id : ids) joined += tok.token_to_piece(id);
    if (tok.add_space_prefix() && !c.text.empty()) joined.erase(0, 1);
    EXPECT_EQ(joined, c.text) << "input " << show(c.text);
  }
  EXPECT_EQ(failures, 0);
}

TEST(TokenizerVectors, LlamaSpm) {
  NASCENT_SHARED_FILE_OR_SKIP(path, "tokenizer/ggml-vocab-llama-spm.gguf");
  check_vectors(path, 46);
}

TEST(TokenizerVectors, Gpt2) {
  NASCENT_SHARED_FILE_OR_SKIP(path, "tokenizer/ggml-vocab-gpt-2.gguf");
  check_vectors(path, 46);
}

}  // namespace
}  // namespace nascent::test
