// `nascent serve`: an OpenAI-compatible HTTP server (llama-server's flags)
// over serve::Scheduler's continuous batching. HTTP is cpp-httplib
// (Debian's libcpp-httplib-dev): one thread per connection from a pool
// sized for every slot and queue entry, so streaming clients never wait for
// a thread. SIGINT/SIGTERM: new requests get 503, running ones have
// --shutdown-grace seconds to finish, then are cancelled. --model-draft
// makes decoding speculative (serve::SchedulerOptions::draft).
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "apps/nascent/chat_common.h"
#include "apps/nascent/command.h"
#include "apps/nascent/llama_common.h"
#include "apps/nascent/serve_routes.h"
#include "nascent/backends/device.h"
#include "nascent/io/file.h"

namespace {

using namespace nascent;

struct ServeArgs {
  cli::ModelArgs model;  // -m, -t, --device (the sampling flags are unused).
  std::string host = "127.0.0.1";
  int port = 8080;
  int32_t n_parallel = 4;
  int64_t ctx_total = 0;  // Split over the slots; 0: the model's per slot.
  std::string api_key;
  std::string alias;
  int32_t max_queue = 64;
  int64_t n_batch = 512;
  int32_t n_predict = -1;
  double timeout_s = 600;
  double grace_s = 5;
  size_t max_body = 8 << 20;
  cli::ChatTemplateArgs tmpl;
  std::string model_draft;  // Speculative decoding.
  int32_t n_draft = 4;
};

int run_serve(const ServeArgs& a) {
  // Signals go to the thread that waits for them, none to the workers
  // (their threads inherit this mask); a client that left must not kill
  // the process through SIGPIPE.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  cli::ModelArgs margs = a.model;
  margs.n_seq = a.n_parallel;
  margs.n_ctx = a.ctx_total > 0 ? a.ctx_total / a.n_parallel : 0;
  if (a.ctx_total > 0 && margs.n_ctx < 8) {
    throw ValueError(fmt::format(
        "serve: -c {} over -np {} leaves {} positions per slot (at least 8)",
        a.ctx_total, a.n_parallel, margs.n_ctx));
  }
  cli::ServerState st;
  st.model = cli::load_model(margs);
  st.tokenizer = tokenizer::Tokenizer::from_gguf(st.model->file().metadata());
  st.model_name = a.alias.empty()
                      ? std::filesystem::path(a.model.model).filename().string()
                      : a.alias;
  st.created = int64_t(std::time(nullptr));
  try {
    st.chat_template = cli::load_chat_template(*st.tokenizer, a.tmpl, "serve");
  } catch (const ValueError& e) {
    // Completions still work; chat requests say why they cannot.
    if (!a.tmpl.chat_template.empty()) throw;
    fmt::print(stderr,
               "serve: no chat template ({}); /v1/chat/completions "
               "is refused\n",
               e.what());
  }
  st.template_kwargs =
      cli::parse_template_kwargs(a.tmpl.kwargs, "--chat-template-kwargs");
  st.limits.default_max_tokens = a.n_predict;
  st.request_timeout = std::chrono::milliseconds(int64_t(a.timeout_s * 1000.0));
  st.api_key = a.api_key;
  std::shared_ptr<llama::Model> draft;
  if (!a.model_draft.empty()) {
    // The target's slots and context, on its backend.
    draft = llama::load(a.model_draft, st.model->backend(),
                        {.n_ctx = st.model->n_ctx(), .n_seq = a.n_parallel});
  }
  st.scheduler = std::make_unique<serve::Scheduler>(
      st.model, *st.tokenizer,
      serve::SchedulerOptions{.max_queue = a.max_queue,
                              .n_batch = a.n_batch,
                              .draft = draft,
                              .n_draft = a.n_draft});

  httplib::Server svr;
  const size_t threads = size_t(a.n_parallel + a.max_queue + 8);
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr.set_payload_max_length(a.max_body);
  svr.set_read_timeout(30);
  svr.set_write_timeout(30);
  // Idle keep-alive connections hold a pool thread; a short wait also lets
  // a shutdown finish soon.
  svr.set_keep_alive_timeout(2);
  cli::add_routes(svr, st);
  const int port = a.port == 0 ? svr.bind_to_any_port(a.host)
                   : svr.bind_to_port(a.host, a.port) ? a.port
                                                      : -1;
  if (port < 0) {
    throw IoError(fmt::format("serve: cannot listen on {}:{}", a.host, a.port));
  }
  st.scheduler->start();
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    fmt::print(stderr, "serve: {} received, shutting down\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM");
    st.closing = true;
    st.scheduler->shutdown(
        std::chrono::milliseconds(int64_t(a.grace_s * 1000.0)));
    // Every request has its last event now; let the streams send theirs.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (st.streams_open > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    svr.stop();
  });
  fmt::print(stderr,
             "serve: {} on {} ({} slots of {} positions{}), listening on "
             "http://{}:{}\n",
             st.model_name, describe_backend(st.model->backend()), a.n_parallel,
             st.model->n_ctx(),
             draft
                 ? fmt::format(
                       ", draft {} proposing {}",
                       std::filesystem::path(a.model_draft).filename().string(),
                       a.n_draft)
                 : "",
             a.host, port);
  std::fflush(stderr);
  const bool ok = svr.listen_after_bind();
  if (!st.closing) {
    // listen failed by itself: end the waiter as a signal would.
    pthread_kill(waiter.native_handle(), SIGTERM);
  }
  waiter.join();
  fmt::print(stderr, "serve: stopped\n");
  return ok || st.closing ? 0 : 1;
}

}  // namespace

NASCENT_COMMAND(
    "serve",
    "an OpenAI-compatible HTTP server with continuous batching (like "
    "llama-server)",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<ServeArgs>();
      sub.add_option("-m,--model", a->model.model, "GGUF model file")
          ->required()
          ->check(CLI::ExistingFile);
      sub.add_option("--host", a->host, "address to listen on")
          ->capture_default_str();
      sub.add_option("--port", a->port, "port (0: any free port)")
          ->capture_default_str()
          ->check(CLI::Range(0, 65535));
      sub.add_option("--np,--parallel", a->n_parallel,
                     "sequence slots: requests served at once")
          ->capture_default_str()
          ->check(CLI::Range(1, 256));
      sub.add_option("-c,--ctx-size", a->ctx_total,
                     "context positions of all slots together (0: the "
                     "model's, at most 4096, for each slot)")
          ->check(CLI::NonNegativeNumber);
      sub.add_option("-t,--threads", a->model.threads,
                     "CPU threads (0: all cores)")
          ->check(CLI::NonNegativeNumber);
      sub.add_option("-d,--device", a->model.device,
                     "where to run: cpu, cuda or cuda:N")
          ->capture_default_str();
      sub.add_option("--api-key", a->api_key,
                     "require 'Authorization: Bearer KEY' (not on /health)");
      sub.add_option("-a,--alias", a->alias,
                     "the model's name in responses (default: the file's)");
      sub.add_option("--max-queue", a->max_queue,
                     "requests waiting for a slot before 503")
          ->capture_default_str()
          ->check(CLI::Range(0, 4096));
      sub.add_option("-b,--batch-size", a->n_batch,
                     "tokens per batched step at most")
          ->capture_default_str()
          ->check(CLI::Range(1, 8192));
      sub.add_option("-n,--n-predict", a->n_predict,
                     "max_tokens when a request gives none (-1: until the "
                     "end or a full context)")
          ->capture_default_str();
      sub.add_option("--timeout", a->timeout_s,
                     "seconds a request may take at most (0: no limit)")
          ->capture_default_str()
          ->check(CLI::NonNegativeNumber);
      sub.add_option("--shutdown-grace", a->grace_s,
                     "seconds running requests get to finish on SIGINT or "
                     "SIGTERM")
          ->capture_default_str()
          ->check(CLI::NonNegativeNumber);
      sub.add_option("--max-body", a->max_body,
                     "largest request body in bytes (413 beyond)")
          ->capture_default_str();
      cli::add_chat_template_options(sub, a->tmpl);
      sub.add_option("--model-draft", a->model_draft,
                     "a draft model for speculative decoding: the same "
                     "greedy tokens, samples of the same distribution, in "
                     "fewer target passes")
          ->check(CLI::ExistingFile);
      sub.add_option("--draft", a->n_draft,
                     "tokens the draft proposes per sequence and step")
          ->capture_default_str()
          ->check(CLI::Range(1, 64));
      return [a] { return run_serve(*a); };
    });
