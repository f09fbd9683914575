// What `nascent serve`'s HTTP routes share: the model, its tokenizer and
// chat template, the scheduler, the limits, and counters for /metrics.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include <httplib.h>

#include "nascent/generate/chat_template.h"
#include "nascent/serve/openai.h"
#include "nascent/serve/scheduler.h"

namespace nascent::cli {

struct ServerState {
  std::string model_name;
  int64_t created = 0;  // Start time (GET /v1/models).
  std::shared_ptr<llama::Model> model;
  std::optional<tokenizer::Tokenizer> tokenizer;
  std::optional<generate::ChatTemplate> chat_template;  // None: no chat.
  jinja::Dict template_kwargs;
  std::unique_ptr<serve::Scheduler> scheduler;
  serve::openai::Limits limits;
  std::chrono::milliseconds request_timeout{0};
  std::string api_key;  // Empty: none asked.
  std::atomic<bool> closing{false};
  std::atomic<uint64_t> seed_counter{0};  // Seeds of requests without one.
  // HTTP responses by class, for /metrics.
  std::atomic<int64_t> http_2xx{0}, http_4xx{0}, http_5xx{0};
  std::atomic<int64_t> streams_dropped{0};  // Clients gone mid-stream.
  // Streams still sending: a shutdown waits for their last chunks before
  // stopping httplib (which stops chunked writes once it stops).
  std::atomic<int64_t> streams_open{0};
};

// POST /v1/chat/completions, /v1/completions, /tokenize, /detokenize; GET
// /v1/models, /health, /metrics; errors in OpenAI's shape; the API key.
void add_routes(httplib::Server& server, ServerState& state);

}  // namespace nascent::cli
