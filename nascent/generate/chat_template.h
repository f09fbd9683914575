// Chat prompts in the formats models were fine-tuned on. The GGUF file
// carries the template as Jinja source (tokenizer.chat_template); rather
// than run Jinja, the known formats are recognised from it and rendered
// here, exactly as the Hugging Face templates render them:
//   chatml: <|im_start|>{role}\n{content}<|im_end|>\n ... and, with a
//           generation prompt, <|im_start|>assistant\n
//   llama2: {bos}[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST]
//           {assistant} {eos}{bos}[INST] {user} [/INST] ...  (contents
//           stripped, roles alternating user/assistant after an optional
//           system message; Meta's Llama-2-chat template)
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace nascent {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant".
  std::string content;
};

enum class ChatFormat { chatml, llama2 };

std::string_view name(ChatFormat format);
// "chatml", "llama2" (also "llama-2"); nothing for other names.
std::optional<ChatFormat> chat_format_from_name(std::string_view name);
// Recognises the format of a Jinja chat template: "<|im_start|>" means
// chatml, "[INST]" llama2. Anything else, or no template, falls back to
// chatml, as llama.cpp does.
ChatFormat detect_chat_format(std::string_view jinja_template);
// Whether detect_chat_format recognised the template (false: fallback).
bool is_known_chat_template(std::string_view jinja_template);

// Renders the conversation. chatml takes any role; llama2 raises
// ValueError unless the roles are an optional system message, then user and
// assistant alternating (where Meta's template would silently drop a
// misplaced system message, this says so).
std::string apply_chat_template(ChatFormat format,
                                std::span<const ChatMessage> messages,
                                bool add_generation_prompt,
                                std::string_view bos = "<s>",
                                std::string_view eos = "</s>");

}  // namespace nascent
