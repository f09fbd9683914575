#include "nascent/generate/chat_template.h"

#include <fmt/format.h>

#include "nascent/core/error.h"
#include "nascent/tokenizer/unicode.h"

namespace nascent {
namespace {

// Python's str.isspace(): White_Space plus the four separators U+001C..F.
bool py_space(uint32_t cp) {
  return tokenizer::unicode::is_whitespace(cp) || (cp >= 0x1C && cp <= 0x1F);
}

// Python's str.strip() (the templates call content.strip()).
std::string strip(std::string_view s) {
  std::vector<uint32_t> cps = tokenizer::unicode::to_code_points(s);
  size_t begin = 0, end = cps.size();
  while (begin < end && py_space(cps[begin])) ++begin;
  while (end > begin && py_space(cps[end - 1])) --end;
  // Map code point positions back to bytes (invalid bytes count one each).
  size_t byte = 0, first = 0, last = s.size();
  for (size_t i = 0; i <= cps.size(); ++i) {
    if (i == begin) first = byte;
    if (i == end) {
      last = byte;
      break;
    }
    uint32_t cp;
    size_t n = tokenizer::unicode::decode_utf8(s, byte, &cp);
    byte += n ? n : 1;
  }
  return std::string(s.substr(first, last - first));
}

std::string chatml(std::span<const ChatMessage> messages,
                   bool add_generation_prompt) {
  std::string out;
  for (const ChatMessage& m : messages) {
    out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

std::string llama2(std::span<const ChatMessage> messages, std::string_view bos,
                   std::string_view eos) {
  std::optional<std::string> system;
  if (!messages.empty() && messages[0].role == "system") {
    system = messages[0].content;
    messages = messages.subspan(1);
  }
  std::string out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    bool user_turn = i % 2 == 0;
    if ((m.role == "user") != user_turn ||
        (m.role != "user" && m.role != "assistant")) {
      throw ValueError(fmt::format(
          "chat template llama2: message {} has role '{}'; roles must be an "
          "optional system message, then user and assistant alternating",
          i + (system ? 1 : 0), m.role));
    }
    std::string content = m.content;
    if (i == 0 && system) {
      content = "<<SYS>>\n" + *system + "\n<</SYS>>\n\n" + content;
    }
    if (user_turn) {
      out += fmt::format("{}[INST] {} [/INST]", bos, strip(content));
    } else {
      out += fmt::format(" {} {}", strip(content), eos);
    }
  }
  return out;
}

}  // namespace

std::string_view name(ChatFormat format) {
  return format == ChatFormat::chatml ? "chatml" : "llama2";
}

std::optional<ChatFormat> chat_format_from_name(std::string_view name) {
  if (name == "chatml") return ChatFormat::chatml;
  if (name == "llama2" || name == "llama-2") return ChatFormat::llama2;
  return std::nullopt;
}

bool is_known_chat_template(std::string_view t) {
  return t.find("<|im_start|>") != std::string_view::npos ||
         t.find("[INST]") != std::string_view::npos;
}

ChatFormat detect_chat_format(std::string_view t) {
  if (t.find("<|im_start|>") != std::string_view::npos) {
    return ChatFormat::chatml;
  }
  if (t.find("[INST]") != std::string_view::npos) return ChatFormat::llama2;
  return ChatFormat::chatml;
}

std::string apply_chat_template(ChatFormat format,
                                std::span<const ChatMessage> messages,
                                bool add_generation_prompt,
                                std::string_view bos, std::string_view eos) {
  if (format == ChatFormat::chatml) {
    return chatml(messages, add_generation_prompt);
  }
  return llama2(messages, bos, eos);
}

}  // namespace nascent
