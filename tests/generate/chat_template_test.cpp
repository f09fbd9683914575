// Chat templates: the expected prompts were rendered with Jinja2 from the
// Hugging Face templates (Meta's Llama-2-chat and ChatML); the built-in
// formats must give the same text as the models' own templates.
#include <gtest/gtest.h>

#include <algorithm>

#include "nascent/core/error.h"
#include "nascent/generate/chat_template.h"
#include "tests/shared_data.h"

namespace nascent::test {
namespace {

// meta-llama/Llama-2-7b-chat-hf's tokenizer.chat_template.
const char* kLlama2Jinja =
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = "
    "messages[1:] %}{% set system_message = messages[0]['content'] %}{% else "
    "%}{% set loop_messages = messages %}{% set system_message = false %}{% "
    "endif %}{% for message in loop_messages %}{% if (message['role'] == "
    "'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation "
    "roles must alternate user/assistant/user/assistant/...') }}{% endif "
    "%}{% if loop.index0 == 0 and system_message != false %}{% set content = "
    "'<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + "
    "message['content'] %}{% else %}{% set content = message['content'] %}{% "
    "endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + "
    "content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' "
    "%}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";
const char* kChatmlJinja =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' "
    "+ message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if "
    "add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const std::vector<std::vector<generate::ChatMessage>> kConversations = {
    {{"user", "Hello"}},
    {{"system", "You are terse."},
     {"user", "  Hi there \n"},
     {"assistant", " Hello! "},
     {"user", "2+2?"}},
    {{"user", "a"}, {"assistant", "b"}},
};

std::string render(std::string_view source,
                   const std::vector<generate::ChatMessage>& chat, bool gen,
                   std::string bos = "<s>", std::string eos = "</s>") {
  return generate::ChatTemplate(source, std::move(bos), std::move(eos))
      .apply(chat, gen);
}

TEST(ChatTemplate, Builtins) {
  const std::vector<std::string_view> names =
      generate::ChatTemplate::builtin_names();
  for (const char* n : {"chatml", "llama2", "llama3", "gemma", "phi3"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
    EXPECT_TRUE(generate::ChatTemplate::builtin(n).has_value()) << n;
  }
  EXPECT_FALSE(generate::ChatTemplate::builtin("zephyr").has_value());
}

TEST(ChatTemplate, Llama2) {
  const std::vector<std::string> expected = {
      "<s>[INST] Hello [/INST]",
      "<s>[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\n  Hi there [/INST] "
      "Hello! </s><s>[INST] 2+2? [/INST]",
      "<s>[INST] a [/INST] b </s>",
  };
  for (size_t i = 0; i < kConversations.size(); ++i) {
    for (bool gen : {false, true}) {  // llama2 has no generation prompt.
      EXPECT_EQ(render(kLlama2Jinja, kConversations[i], gen), expected[i]);
      EXPECT_EQ(render(*generate::ChatTemplate::builtin("llama2"),
                       kConversations[i], gen),
                expected[i]);
    }
  }
  std::vector<generate::ChatMessage> custom = {{"user", "x"}};
  EXPECT_EQ(render(kLlama2Jinja, custom, true, "[B]", "[E]"),
            "[B][INST] x [/INST]");
}

TEST(ChatTemplate, Chatml) {
  const std::vector<std::string> expected = {
      "<|im_start|>user\nHello<|im_end|>\n",
      "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\n  Hi "
      "there \n<|im_end|>\n<|im_start|>assistant\n Hello! "
      "<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n",
      "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nb<|im_end|>\n",
  };
  for (size_t i = 0; i < kConversations.size(); ++i) {
    for (std::string_view src : {std::string_view(kChatmlJinja),
                                 *generate::ChatTemplate::builtin("chatml")}) {
      EXPECT_EQ(render(src, kConversations[i], false), expected[i]);
      EXPECT_EQ(render(src, kConversations[i], true),
                expected[i] + "<|im_start|>assistant\n");
    }
  }
}

TEST(ChatTemplate, Llama3AndExtraVariables) {
  const std::vector<generate::ChatMessage> chat = {{"system", " S "},
                                                   {"user", "U"}};
  EXPECT_EQ(render(*generate::ChatTemplate::builtin("llama3"), chat, true,
                   "<|begin_of_text|>", "<|eot_id|>"),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS"
            "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nU<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  // Extra variables reach the template (--chat-template-kwargs).
  generate::ChatTemplate t("{{ 'think' if enable_thinking else 'plain' }}", "",
                           "");
  jinja::Dict extra;
  extra.set("enable_thinking", jinja::Value(true));
  EXPECT_EQ(t.apply(chat, true, extra), "think");
  EXPECT_EQ(t.apply(chat, true), "plain");
}

TEST(ChatTemplate, ToolsAndTime) {
  generate::ChatTemplate t(
      "{{ tools | tojson }}|{{ documents }}|{{ strftime_now('%Y-%m-%d') }}", "",
      "");
  generate::ChatTemplate::Inputs in;
  in.messages = jinja::Value(jinja::List{});
  in.tools = jinja::parse_json(R"([{"name": "f"}])", "tools");
  in.now = 86400 * 365;  // 1971-01-01 in UTC; a day either side locally.
  const std::string out = t.render(in);
  EXPECT_TRUE(out.starts_with("[{\"name\": \"f\"}]|None|197")) << out;
}

TEST(ChatTemplate, Llama2RolesMustAlternate) {
  std::vector<generate::ChatMessage> twice = {{"user", "a"}, {"user", "b"}};
  try {
    render(*generate::ChatTemplate::builtin("llama2"), twice, true);
    ADD_FAILURE();
  } catch (const jinja::TemplateException& e) {
    EXPECT_NE(std::string(e.what()).find("roles must be"), std::string::npos)
        << e.what();
  }
  // Meta's template drops a late system message; the built-in says so.
  std::vector<generate::ChatMessage> late_system = {{"user", "a"},
                                                    {"system", "b"}};
  EXPECT_EQ(render(kLlama2Jinja, late_system, true), "<s>[INST] a [/INST]");
  EXPECT_THROW(
      render(*generate::ChatTemplate::builtin("llama2"), late_system, true),
      ValueError);
  std::vector<generate::ChatMessage> assistant_first = {{"assistant", "a"}};
  EXPECT_THROW(render(kLlama2Jinja, assistant_first, true), ValueError);
}

TEST(ChatTemplate, BadTemplateNamesTheLine) {
  try {
    generate::ChatTemplate("line one\n{% for x in messages %}\n{{ x }", "", "");
    ADD_FAILURE();
  } catch (const jinja::TemplateError& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos)
        << e.what();
  }
}

// The token that ends an assistant turn, found by rendering one: the
// vocabularies' own control tokens.
TEST(ChatTemplate, EndOfTurnTokens) {
  NASCENT_SHARED_FILE_OR_SKIP(qwen_path, "tokenizer/ggml-vocab-qwen2.gguf");
  NASCENT_SHARED_FILE_OR_SKIP(llama_path,
                              "tokenizer/ggml-vocab-llama-bpe.gguf");
  const tokenizer::Tokenizer qwen =
      tokenizer::Tokenizer::from_gguf_file(qwen_path);
  const tokenizer::Tokenizer llama =
      tokenizer::Tokenizer::from_gguf_file(llama_path);
  auto names = [](const tokenizer::Tokenizer& tok,
                  const generate::ChatTemplate& t) {
    std::vector<std::string> out;
    for (tokenizer::TokenId id : t.end_of_turn_tokens(tok)) {
      out.push_back(tok.token_text(id));
    }
    return out;
  };
  using Names = std::vector<std::string>;
  EXPECT_EQ(names(qwen, generate::ChatTemplate::for_model(qwen)),
            Names{"<|im_end|>"});
  EXPECT_EQ(names(qwen, generate::ChatTemplate::for_model(qwen, "chatml")),
            Names{"<|im_end|>"});
  EXPECT_EQ(names(llama, generate::ChatTemplate::for_model(llama, "llama3")),
            Names{"<|eot_id|>"});
  // A template that wants a system message first is probed with one.
  const generate::ChatTemplate strict(
      "{% if messages[0].role != 'system' %}{{ raise_exception('system') }}"
      "{% endif %}{% for m in messages %}{{ m.content }}<|im_end|>"
      "{% endfor %}",
      "", "");
  EXPECT_EQ(names(qwen, strict), Names{"<|im_end|>"});
  // Text after the reply before any control token: no end-of-turn token
  // (EOS alone ends the reply), as when the template writes none.
  EXPECT_TRUE(
      generate::ChatTemplate("{% for m in messages %}{{ m.content }} END"
                             "<|im_end|>{% endfor %}",
                             "", "")
          .end_of_turn_tokens(qwen)
          .empty());
  EXPECT_TRUE(generate::ChatTemplate("{% for m in messages %}{{ m.content }}\n"
                                     "{% endfor %}",
                                     "", "")
                  .end_of_turn_tokens(qwen)
                  .empty());
}

}  // namespace
}  // namespace nascent::test
