// nascent.llama: GGUF LLaMA-family models, their tokenizers, and text
// generation that streams:
//   model = nascent.llama.load("model.gguf")
//   for piece in model.generate("Once upon a time", max_tokens=32):
//       print(piece, end="", flush=True)
// The generator runs on a thread of its own, without the GIL, handing each
// piece over through a queue; leaving the loop early stops it.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "nascent/generate/generator.h"
#include "nascent/models/llama/model.h"
#include "nascent/tokenizer/tokenizer.h"
#include "python/src/common.h"

namespace nascent::python {

namespace {

struct Model {
  std::shared_ptr<llama::Model> model;
  tokenizer::Tokenizer tok;
  Device* device;
};

generate::GenerateOptions options(int max_tokens, double temperature, int top_k,
                                  double top_p, double min_p,
                                  double repeat_penalty, uint64_t seed,
                                  std::vector<std::string> stop,
                                  bool ignore_eos) {
  generate::GenerateOptions o;
  o.sampling = {.temperature = float(temperature),
                .top_k = top_k,
                .top_p = float(top_p),
                .min_p = float(min_p),
                .repeat_penalty = float(repeat_penalty),
                .seed = seed};
  o.max_tokens = max_tokens;
  o.stop = std::move(stop);
  o.ignore_eos = ignore_eos;
  return o;
}

// The pieces of one generation, produced on a worker thread.
class Stream {
 public:
  Stream(const Model& m, std::string prompt, generate::GenerateOptions o) {
    worker_ = std::thread([this, &m, prompt = std::move(prompt), o] {
      try {
        generate::TextGenerator gen(m.model, m.tok, o);
        gen.generate(prompt, [this](std::string_view piece) {
          std::lock_guard<std::mutex> lock(mutex_);
          pieces_.emplace_back(piece);
          ready_.notify_one();
          return !cancelled_;
        });
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        error_ = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
      ready_.notify_one();
    });
  }
  ~Stream() { stop(); }

  // The next piece; nullopt when the generation has ended.
  std::optional<std::string> next() {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [this] { return !pieces_.empty() || done_; });
    if (!pieces_.empty()) {
      std::string s = std::move(pieces_.front());
      pieces_.pop_front();
      return s;
    }
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    return std::nullopt;
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      cancelled_ = true;
    }
    if (worker_.joinable()) worker_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::string> pieces_;
  bool done_ = false;
  bool cancelled_ = false;
  std::exception_ptr error_;
  std::thread worker_;
};

}  // namespace

void bind_llama(py::module_& m) {
  py::module_ llama =
      m.def_submodule("llama", "LLaMA-family models from GGUF files");
  py::class_<Stream>(llama, "TextStream",
                     "An iterator over generated text pieces.")
      .def("__iter__", [](Stream& s) -> Stream& { return s; })
      .def("__next__",
           [](Stream& s) {
             std::optional<std::string> piece;
             {
               py::gil_scoped_release release;
               piece = s.next();
             }
             if (!piece) throw py::stop_iteration();
             return *piece;
           })
      .def("close", [](Stream& s) {
        py::gil_scoped_release release;
        s.stop();
      });

  py::class_<Model>(llama, "Model")
      .def_property_readonly("config",
                             [](const Model& md) {
                               const llama::Config& c = md.model->config();
                               py::dict d;
                               d["arch"] = c.arch;
                               d["n_vocab"] = c.n_vocab;
                               d["n_embd"] = c.n_embd;
                               d["n_layer"] = c.n_layer;
                               d["n_head"] = c.n_head;
                               d["n_head_kv"] = c.n_head_kv;
                               d["n_ff"] = c.n_ff;
                               d["n_ctx_train"] = c.n_ctx_train;
                               return d;
                             })
      .def_property_readonly("n_ctx",
                             [](const Model& md) { return md.model->n_ctx(); })
      .def_property_readonly(
          "device", [](const Model& md) { return md.device; },
          py::return_value_policy::reference)
      .def(
          "tokenize",
          [](const Model& md, const std::string& text, bool add_special,
             bool parse_special) {
            return md.tok.encode(text, add_special && md.tok.add_bos(),
                                 parse_special);
          },
          py::arg("text"), py::arg("add_special") = true,
          py::arg("parse_special") = true)
      .def(
          "detokenize",
          [](const Model& md, const std::vector<tokenizer::TokenId>& ids) {
            return md.tok.decode(ids);
          },
          py::arg("tokens"))
      .def(
          "logits",
          [](Model& md, const std::vector<int32_t>& tokens, bool all) {
            Tensor out;
            {
              py::gil_scoped_release release;
              md.model->reset();
              out = md.model->forward(
                  tokens, 0,
                  all ? llama::LogitsMode::all : llama::LogitsMode::last);
            }
            return on_autodiff(out);
          },
          py::arg("tokens"), py::arg("all") = false,
          "The logits after `tokens` (of every position with all=True).")
      .def(
          "generate",
          [](const Model& md, const std::string& prompt, int max_tokens,
             double temperature, int top_k, double top_p, double min_p,
             double repeat_penalty, uint64_t seed,
             std::vector<std::string> stop, bool ignore_eos) {
            return new Stream(
                md, prompt,
                options(max_tokens, temperature, top_k, top_p, min_p,
                        repeat_penalty, seed, std::move(stop), ignore_eos));
          },
          py::arg("prompt"), py::arg("max_tokens") = 128,
          py::arg("temperature") = 0.8, py::arg("top_k") = 40,
          py::arg("top_p") = 0.95, py::arg("min_p") = 0.05,
          py::arg("repeat_penalty") = 1.0, py::arg("seed") = 0,
          py::arg("stop") = std::vector<std::string>{},
          py::arg("ignore_eos") = false, py::keep_alive<0, 1>(),
          "An iterator over the text as it is sampled (llama.cpp's sampling "
          "chain).");
  llama.def(
      "load",
      [](const std::string& path, py::object device, int64_t n_ctx) {
        Device& d = device_arg(device);
        py::gil_scoped_release release;
        auto model = llama::load(path, *d.inner, {.n_ctx = n_ctx});
        auto tok = tokenizer::Tokenizer::from_gguf(model->file().metadata());
        return new Model{std::move(model), std::move(tok), &d};
      },
      py::arg("path"), py::arg("device") = py::none(), py::arg("n_ctx") = 0,
      "Loads a GGUF model (memory-mapped) and its tokenizer.");
}

}  // namespace nascent::python
