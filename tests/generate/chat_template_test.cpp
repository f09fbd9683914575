// Chat formats: the expected prompts were rendered with Jinja2 from the
// Hugging Face templates (Meta's Llama-2-chat and ChatML).
#include <gtest/gtest.h>

#include "nascent/core/error.h"
#include "nascent/generate/chat_template.h"

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

const std::vector<std::vector<ChatMessage>> kConversations = {
    {{"user", "Hello"}},
    {{"system", "You are terse."},
     {"user", "  Hi there \n"},
     {"assistant", " Hello! "},
     {"user", "2+2?"}},
    {{"user", "a"}, {"assistant", "b"}},
};

TEST(ChatTemplate, DetectsTheFormat) {
  EXPECT_EQ(detect_chat_format(kLlama2Jinja), ChatFormat::llama2);
  EXPECT_EQ(detect_chat_format(kChatmlJinja), ChatFormat::chatml);
  EXPECT_TRUE(is_known_chat_template(kLlama2Jinja));
  EXPECT_FALSE(is_known_chat_template("{{ messages }}"));
  EXPECT_EQ(detect_chat_format("{{ messages }}"), ChatFormat::chatml);
  EXPECT_EQ(detect_chat_format(""), ChatFormat::chatml);
  EXPECT_EQ(chat_format_from_name("llama2"), ChatFormat::llama2);
  EXPECT_EQ(chat_format_from_name("llama-2"), ChatFormat::llama2);
  EXPECT_EQ(chat_format_from_name("chatml"), ChatFormat::chatml);
  EXPECT_FALSE(chat_format_from_name("zephyr").has_value());
  EXPECT_EQ(name(ChatFormat::llama2), "llama2");
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
      EXPECT_EQ(apply_chat_template(ChatFormat::llama2, kConversations[i], gen),
                expected[i]);
    }
  }
  std::vector<ChatMessage> custom = {{"user", "x"}};
  EXPECT_EQ(apply_chat_template(ChatFormat::llama2, custom, true, "[B]", "[E]"),
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
    EXPECT_EQ(apply_chat_template(ChatFormat::chatml, kConversations[i], false),
              expected[i]);
    EXPECT_EQ(apply_chat_template(ChatFormat::chatml, kConversations[i], true),
              expected[i] + "<|im_start|>assistant\n");
  }
}

TEST(ChatTemplate, Llama2RolesMustAlternate) {
  std::vector<ChatMessage> twice = {{"user", "a"}, {"user", "b"}};
  try {
    apply_chat_template(ChatFormat::llama2, twice, true);
    ADD_FAILURE();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("message 1 has role 'user'"),
              std::string::npos)
        << e.what();
  }
  std::vector<ChatMessage> late_system = {{"user", "a"}, {"system", "b"}};
  EXPECT_THROW(apply_chat_template(ChatFormat::llama2, late_system, true),
               ValueError);
  std::vector<ChatMessage> assistant_first = {{"assistant", "a"}};
  EXPECT_THROW(apply_chat_template(ChatFormat::llama2, assistant_first, true),
               ValueError);
}

}  // namespace
}  // namespace nascent::test
