// The HTTP side of `nascent serve`: each completion request becomes n
// scheduler requests; a non-streaming one waits for them, a streaming one
// sends each event as a server-sent event (`data: {json}`, then `data:
// [DONE]`) from httplib's chunked content provider, which runs on the
// connection's thread. A write that fails (the client left) cancels the
// requests, so their slots are free before the next step.
#include <fmt/format.h>

#include <chrono>
#include <random>
#include <thread>

#include "apps/nascent/serve_routes.h"

namespace nascent::cli {
namespace {

using namespace std::chrono_literals;
namespace oa = serve::openai;
using json = oa::json;

void send_json(httplib::Response& res, int status, const json& j) {
  res.status = status;
  res.set_content(oa::dump(j), "application/json");
}

// Runs a handler; every error becomes OpenAI's JSON with its status.
template <class F>
void guarded(httplib::Response& res, const char* param, F&& f) {
  try {
    f();
  } catch (const oa::ApiError& e) {
    send_json(res, e.status(), oa::error_body(e));
  } catch (const serve::QueueFull& e) {
    send_json(res, 503, oa::error_body(503, e.what()));
  } catch (const serve::PromptTooLong& e) {
    send_json(
        res, 413,
        oa::error_body(oa::ApiError(413, "invalid_request_error", param,
                                    e.what(), "context_length_exceeded")));
  } catch (const Error& e) {
    send_json(res, 400, oa::error_body(400, e.what()));
  } catch (const std::exception& e) {
    send_json(res, 500, oa::error_body(500, e.what()));
  }
}

uint64_t fresh_seed(ServerState& st) {
  static const uint64_t base = std::random_device{}();
  uint64_t x = base + 0x9e3779b97f4a7c15ull * (++st.seed_counter);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;  // splitmix64's finaliser.
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The requests of one completion call and what has been sent of them.
struct Call {
  oa::Parsed parsed;
  oa::ResponseInfo info;
  std::vector<serve::Request> requests;
  std::vector<oa::Choice> choices;
  std::vector<bool> started, finished;
  bool done_sent = false;

  bool all_finished() const {
    return std::all_of(finished.begin(), finished.end(),
                       [](bool f) { return f; });
  }
  void cancel() {
    for (serve::Request& r : requests) r.cancel();
  }
};

bool write(httplib::DataSink& sink, const std::string& s) {
  return sink.is_writable() && sink.write(s.data(), s.size());
}

// One call of the content provider: sends the next event (or a keep-alive
// comment after a second without one, which also finds clients that left
// while their request waited in the queue). False: the client is gone.
bool pump(Call& c, httplib::DataSink& sink) {
  if (c.done_sent) return false;
  const auto since = std::chrono::steady_clock::now();
  while (!c.all_finished()) {
    const bool one = c.requests.size() == 1;
    for (size_t i = 0; i < c.requests.size(); ++i) {
      if (c.finished[i]) continue;
      std::optional<serve::Event> e = c.requests[i].next(one ? 250ms : 0ms);
      if (!e) continue;
      c.choices[i].add(*e);
      if (e->done) c.finished[i] = true;
      if (e->done && e->finish == serve::FinishReason::error) {
        const json err = oa::error_body(500, e->error);
        return write(sink, "data: " + oa::dump(err) + "\n\n");
      }
      const bool logprobs = c.parsed.logprobs && !e->tokens.empty();
      if (e->text.empty() && !e->done && !logprobs && c.started[i]) {
        continue;  // Nothing to show yet (a character or a stop string
                   // still forming).
      }
      const json chunk =
          oa::stream_chunk(c.parsed, c.info, int32_t(i), *e, !c.started[i]);
      c.started[i] = true;
      return write(sink, "data: " + oa::dump(chunk) + "\n\n");
    }
    if (!one) std::this_thread::sleep_for(5ms);
    if (std::chrono::steady_clock::now() - since > 1s) {
      return write(sink, ": keep-alive\n\n");
    }
  }
  if (c.parsed.include_usage) {
    const json usage = oa::usage_chunk(c.parsed, c.info, c.choices);
    if (!write(sink, "data: " + oa::dump(usage) + "\n\n")) return false;
  }
  c.done_sent = true;
  if (!write(sink, "data: [DONE]\n\n")) return false;
  sink.done();
  return true;
}

void completion(ServerState& st, const httplib::Request& req,
                httplib::Response& res, bool chat) {
  const json body = oa::parse_body(req.body);
  auto c = std::make_shared<Call>();
  c->parsed =
      chat ? oa::parse_chat(body, *st.tokenizer,
                            st.chat_template ? &*st.chat_template : nullptr,
                            st.template_kwargs, st.limits)
           : oa::parse_completion(body, *st.tokenizer, st.limits);
  const oa::Parsed& p = c->parsed;
  if (st.closing) throw serve::QueueFull("the server is shutting down");
  for (int32_t i = 0; i < p.n; ++i) {
    serve::RequestOptions o = p.options;
    o.sampling.seed =
        p.has_seed ? p.options.sampling.seed + uint64_t(i) : fresh_seed(st);
    o.timeout = st.request_timeout;
    // A failure drops (cancels) the requests already queued.
    c->requests.push_back(st.scheduler->submit(p.prompt, o));
  }
  c->choices.resize(size_t(p.n));
  c->started.assign(size_t(p.n), false);
  c->finished.assign(size_t(p.n), false);
  c->info.id =
      fmt::format("{}-{}", chat ? "chatcmpl" : "cmpl", c->requests[0].id());
  c->info.model = st.model_name;
  c->info.created = int64_t(std::time(nullptr));
  if (!p.stream) {
    for (size_t i = 0; i < c->requests.size(); ++i) {
      while (!c->choices[i].finish) {
        if (auto e = c->requests[i].next(1s)) c->choices[i].add(*e);
      }
      const serve::FinishReason f = *c->choices[i].finish;
      if (f == serve::FinishReason::error) {
        throw oa::ApiError(500, "server_error", "", c->choices[i].error);
      }
      if (f == serve::FinishReason::cancelled) {
        throw serve::QueueFull("the server is shutting down");
      }
    }
    send_json(res, 200, oa::completion_response(p, c->info, c->choices));
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  ++st.streams_open;
  res.set_chunked_content_provider(
      "text/event-stream",
      [c](size_t, httplib::DataSink& sink) { return pump(*c, sink); },
      [c, &st](bool success) {
        if (!success && !c->all_finished()) ++st.streams_dropped;
        c->cancel();
        --st.streams_open;
      });
}

std::string metrics_text(const ServerState& st) {
  const serve::Stats s = st.scheduler->stats();
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help,
                    double value) {
    out += fmt::format(
        "# HELP nascent_{0} {1}\n# TYPE nascent_{0} {2}\n"
        "nascent_{0} {3}\n",
        name, help, type, value);
  };
  metric("requests_total", "counter", "Requests submitted to the scheduler.",
         double(s.requests_total));
  metric("requests_finished_total", "counter", "Requests finished.",
         double(s.requests_done));
  metric("requests_rejected_total", "counter",
         "Requests refused (queue full, prompt too long).",
         double(s.requests_rejected));
  metric("streams_dropped_total", "counter",
         "Streaming clients that left before the end.",
         double(st.streams_dropped.load()));
  metric("prompt_tokens_total", "counter", "Prompt tokens evaluated.",
         double(s.prompt_tokens_total));
  metric("prompt_tokens_cached_total", "counter",
         "Prompt tokens reused from a slot's cache.",
         double(s.cached_tokens_total));
  metric("generated_tokens_total", "counter", "Tokens generated.",
         double(s.generated_tokens_total));
  metric("draft_tokens_total", "counter",
         "Tokens the draft model proposed (speculative decoding).",
         double(s.drafted_tokens_total));
  metric("draft_tokens_accepted_total", "counter",
         "Proposed tokens the target kept.", double(s.accepted_tokens_total));
  metric("steps_total", "counter", "Batched forward steps.",
         double(s.steps_total));
  metric("busy_seconds_total", "counter", "Seconds spent in steps.",
         s.busy_seconds);
  metric("queue_length", "gauge", "Requests waiting for a slot.",
         double(s.queue_length));
  metric("slots_active", "gauge", "Slots serving a request.",
         double(s.slots_active));
  metric("slots_total", "gauge", "Sequence slots.", double(s.slots_total));
  metric("batch_tokens", "gauge", "Tokens in the last step.",
         double(s.last_batch_tokens));
  metric("batch_sequences", "gauge", "Sequences in the last step.",
         double(s.last_batch_sequences));
  metric("tokens_per_second", "gauge",
         "Generated tokens per second over the last 10 s of steps.",
         s.recent_tokens_per_s);
  metric("http_responses_2xx_total", "counter", "HTTP 2xx responses.",
         double(st.http_2xx.load()));
  metric("http_responses_4xx_total", "counter", "HTTP 4xx responses.",
         double(st.http_4xx.load()));
  metric("http_responses_5xx_total", "counter", "HTTP 5xx responses.",
         double(st.http_5xx.load()));
  return out;
}

}  // namespace

void add_routes(httplib::Server& svr, ServerState& st) {
  svr.set_pre_routing_handler(
      [&st](const httplib::Request& req, httplib::Response& res) {
        if (st.api_key.empty() || req.path == "/health") {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        if (req.get_header_value("Authorization") == "Bearer " + st.api_key) {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        send_json(res, 401,
                  oa::error_body(oa::ApiError(
                      401, "invalid_request_error", "",
                      "a valid API key is required (Authorization: Bearer KEY)",
                      "invalid_api_key")));
        return httplib::Server::HandlerResponse::Handled;
      });
  // httplib's own refusals (no route, body too large, bad request line)
  // come with an empty body: give them OpenAI's shape.
  svr.set_error_handler(
      [](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;
        const std::string msg =
            res.status == 404
                ? fmt::format("no route for {} {}", req.method, req.path)
            : res.status == 413 ? std::string("the request body is too large")
                                : fmt::format("HTTP {}", res.status);
        send_json(res, res.status, oa::error_body(res.status, msg));
      });
  svr.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        send_json(res, 500, oa::error_body(500, "internal error"));
      });
  svr.set_logger([&st](const httplib::Request&, const httplib::Response& res) {
    (res.status >= 500   ? st.http_5xx
     : res.status >= 400 ? st.http_4xx
                         : st.http_2xx)++;
  });

  svr.Post("/v1/chat/completions",
           [&st](const httplib::Request& req, httplib::Response& res) {
             guarded(res, "messages", [&] { completion(st, req, res, true); });
           });
  svr.Post("/v1/completions",
           [&st](const httplib::Request& req, httplib::Response& res) {
             guarded(res, "prompt", [&] { completion(st, req, res, false); });
           });
  svr.Get("/v1/models", [&st](const httplib::Request&, httplib::Response& res) {
    const json model = {{"id", st.model_name},
                        {"object", "model"},
                        {"created", st.created},
                        {"owned_by", "nascent"}};
    send_json(res, 200, {{"object", "list"}, {"data", json::array({model})}});
  });
  svr.Get("/health", [&st](const httplib::Request&, httplib::Response& res) {
    const serve::Stats s = st.scheduler->stats();
    if (st.closing) {
      send_json(res, 503, {{"status", "shutting down"}});
      return;
    }
    send_json(res, 200,
              {{"status", "ok"},
               {"slots_idle", s.slots_total - s.slots_active},
               {"slots_processing", s.slots_active},
               {"queue_length", s.queue_length}});
  });
  svr.Get("/metrics", [&st](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_text(st), "text/plain; version=0.0.4");
  });
  // llama.cpp's server: {"content", "add_special", "parse_special",
  // "with_pieces"} -> {"tokens"}; {"tokens"} -> {"content"}.
  svr.Post("/tokenize", [&st](const httplib::Request& req,
                              httplib::Response& res) {
    guarded(res, "content", [&] {
      const json b = oa::parse_body(req.body);
      if (!b.contains("content") || !b.at("content").is_string()) {
        throw oa::ApiError(400, "invalid_request_error", "content",
                           "'content' must be a string");
      }
      const bool add = b.value("add_special", false);
      const bool parse = b.value("parse_special", true);
      const auto ids =
          st.tokenizer->encode(b.at("content").get<std::string>(), add, parse);
      json tokens = json::array();
      for (const auto id : ids) {
        if (b.value("with_pieces", false)) {
          tokens.push_back(
              {{"id", id}, {"piece", st.tokenizer->token_to_piece(id, true)}});
        } else {
          tokens.push_back(id);
        }
      }
      send_json(res, 200, {{"tokens", tokens}});
    });
  });
  svr.Post("/detokenize",
           [&st](const httplib::Request& req, httplib::Response& res) {
             guarded(res, "tokens", [&] {
               const json b = oa::parse_body(req.body);
               std::vector<tokenizer::TokenId> ids;
               const json t = b.value("tokens", json());
               bool ok = t.is_array();
               for (const json& x : ok ? t : json::array()) {
                 ok = ok && x.is_number_integer() && x.get<int64_t>() >= 0 &&
                      x.get<int64_t>() < int64_t(st.tokenizer->size());
                 if (ok) ids.push_back(tokenizer::TokenId(x.get<int64_t>()));
               }
               if (!ok) {
                 throw oa::ApiError(
                     400, "invalid_request_error", "tokens",
                     fmt::format("'tokens' must be a list of ids in [0, {})",
                                 st.tokenizer->size()));
               }
               send_json(res, 200, {{"content", st.tokenizer->decode(ids)}});
             });
           });
}

}  // namespace nascent::cli
