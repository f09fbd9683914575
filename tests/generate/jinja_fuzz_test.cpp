// Fuzz-style checks of the Jinja interpreter: the unit-test templates and
// real models' chat templates, truncated, spliced and with bytes replaced by
// Jinja's own punctuation and keywords, either render or raise
// TemplateError, within small limits; nothing else escapes and nothing
// hangs (run under the asan preset to check memory safety as well).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "nascent/generate/jinja/template.h"
#include "tests/shared_data.h"

namespace nascent::test {
namespace {

struct JinjaCase {
  const char* name;
  const char* source;
  const char* expected;
};

#include "generate/jinja_cases.inc"

// Real templates with many constructs (macros, namespaces, tool calls,
// tojson, string methods), when the test data is present.
std::vector<std::string> seeds() {
  std::vector<std::string> out;
  for (const JinjaCase& c : kJinjaCases) out.emplace_back(c.source);
  for (const char* name :
       {"Qwen-Qwen3-0.6B.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja",
        "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
        "google-gemma-2-2b-it.jinja",
        "mistralai-Mistral-Nemo-Instruct-2407.jinja"}) {
    std::ifstream in(shared_data_path(std::string("templates/") + name),
                     std::ios::binary);
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    out.push_back(ss.str());
  }
  return out;
}

jinja::Dict variables() {
  jinja::Dict d = jinja::parse_json(kJinjaContext, "ctx").dict();
  d.set("messages", jinja::parse_json(
                        R"([{"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Grüße 你好"},
                {"role": "assistant", "content": "",
                 "tool_calls": [{"type": "function", "function":
                   {"name": "f", "arguments": {"x": 1}}}]},
                {"role": "tool", "content": "42"},
                {"role": "user", "content": "thanks"}])",
                        "messages"));
  d.set("tools", jinja::parse_json(
                     R"([{"type": "function", "function": {"name": "f",
                         "description": "d", "parameters": {"type": "object",
                         "properties": {"x": {"type": "integer"}}}}}])",
                     "tools"));
  d.set("add_generation_prompt", jinja::Value(true));
  d.set("bos_token", jinja::Value(std::string("<s>")));
  d.set("eos_token", jinja::Value(std::string("</s>")));
  return d;
}

// Jinja's punctuation and keywords: mutations made of them reach deeper
// into the parser and evaluator than random bytes do.
const std::vector<std::string> kPieces = {"{{",
                                          "}}",
                                          "{%",
                                          "%}",
                                          "{#",
                                          "#}",
                                          "-",
                                          "+",
                                          "(",
                                          ")",
                                          "[",
                                          "]",
                                          "{",
                                          "}",
                                          "'",
                                          "\"",
                                          ".",
                                          "|",
                                          "~",
                                          ",",
                                          ":",
                                          "*",
                                          "**",
                                          "//",
                                          "%",
                                          "=",
                                          "==",
                                          "!=",
                                          "<",
                                          ">",
                                          " if ",
                                          " else ",
                                          " for ",
                                          " in ",
                                          " endfor ",
                                          " endif ",
                                          " set ",
                                          " macro ",
                                          " endmacro ",
                                          " call ",
                                          " namespace(",
                                          " loop.",
                                          " is ",
                                          " not ",
                                          " and ",
                                          " or ",
                                          " none ",
                                          " true ",
                                          "0",
                                          "-1",
                                          "1e308",
                                          "9223372036854775807",
                                          "99999999999999999999",
                                          ".99999999999999999999",
                                          "attribute=",
                                          ".format(",
                                          "{99999999999999999999}",
                                          "\n",
                                          "\xff",
                                          "\xe4\xbd",
                                          " messages ",
                                          " tojson ",
                                          " items() ",
                                          "[::-1]",
                                          "raise_exception(",
                                          " caller() ",
                                          " range(",
                                          " join(",
                                          "\\",
                                          "\0"};

std::string mutate(const std::string& s, std::mt19937& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : rng() % n; };
  std::string t = s;
  const int edits = 1 + int(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const size_t at = pick(t.size() + 1);
    switch (rng() % 5) {
      case 0:  // Truncate.
        t.resize(at);
        break;
      case 1:  // Insert a piece.
        t.insert(at, kPieces[pick(kPieces.size())]);
        break;
      case 2:  // Replace a byte with a piece.
        if (at < t.size()) t.replace(at, 1, kPieces[pick(kPieces.size())]);
        break;
      case 3: {  // Delete a run.
        if (at < t.size()) t.erase(at, 1 + pick(16));
        break;
      }
      default: {  // Duplicate a run elsewhere (nests blocks, repeats tags).
        if (t.empty()) break;
        const size_t from = pick(t.size());
        const std::string run = t.substr(from, 1 + pick(64));
        t.insert(pick(t.size() + 1), run);
        break;
      }
    }
  }
  return t;
}

TEST(JinjaFuzz, MutatedTemplatesRenderOrRaiseTemplateError) {
  const std::vector<std::string> base = seeds();
  const jinja::Dict vars = variables();
  const size_t n_real_templates = base.size() - std::size(kJinjaCases);
  jinja::Limits limits;
  limits.max_iterations = 20000;
  limits.max_output_bytes = 1 << 16;
  limits.max_depth = 200;
  // NASCENT_FUZZ_SEED explores other mutations (the default is fixed).
  const char* seed_env = std::getenv("NASCENT_FUZZ_SEED");
  std::mt19937 rng(seed_env ? std::strtoul(seed_env, nullptr, 10) : 26);
  int rendered = 0, refused = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20000; ++i) {
    // Half from the real templates (the last seeds) when they are there.
    const size_t pick = n_real_templates > 0 && i % 2 == 0
                            ? std::size(kJinjaCases) + rng() % n_real_templates
                            : rng() % base.size();
    const std::string source = mutate(base[pick], rng);
    try {
      jinja::Template t(source, limits);
      const std::string out = t.render(vars, 1721988000);
      EXPECT_LE(out.size(), limits.max_output_bytes);
      ++rendered;
    } catch (const jinja::TemplateError& e) {
      EXPECT_NE(std::string(e.what()).find("template"), std::string::npos)
          << e.what();
      ++refused;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "escaped " << e.what() << "\nsource:\n" << source;
    }
  }
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  // Both outcomes must be common, or the mutations test little.
  EXPECT_GT(rendered, 1000);
  EXPECT_GT(refused, 1000);
  EXPECT_GE(base.size(), std::size(kJinjaCases));
  std::printf("%d rendered, %d refused, %zu real templates, %.1f s\n", rendered,
              refused, n_real_templates, s);
  EXPECT_LT(s, 60.0) << "20000 mutated templates took " << s << " s";
}

// Random bytes, and the same with every byte a piece of Jinja syntax.
TEST(JinjaFuzz, NoiseIsRefusedCleanly) {
  std::mt19937 rng(7);
  const jinja::Dict vars = variables();
  for (int i = 0; i < 2000; ++i) {
    std::string source;
    const int n = 1 + int(rng() % 40);
    for (int k = 0; k < n; ++k) {
      if (i % 2 == 0) {
        source += char(rng() & 0xff);
      } else {
        source += kPieces[rng() % kPieces.size()];
      }
    }
    try {
      jinja::Template(source).render(vars, 0);
    } catch (const jinja::TemplateError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "escaped " << e.what() << "\nsource: " << source;
    }
  }
}

}  // namespace
}  // namespace nascent::test
