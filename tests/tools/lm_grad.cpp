// For tests/peer/train_lm_grad_vs_torch.py: the loss and gradient of the
// first micro-batch of a train-lm checkpoint's next step, as nascent
// computes them, written as safetensors ("ids", "loss", "grad.<parameter>",
// and the model's rms_eps and rope base in the metadata) for PyTorch to
// recompute from the checkpoint's weights.
//
//   lm_grad CHECKPOINT TOKENS_FILE OUT.safetensors
#include <cstdio>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "nascent/backends/cpu/backend.h"
#include "nascent/io/safetensors.h"
#include "nascent/models/llama/lm_trainer.h"
#include "nascent/tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  using namespace nascent;
  if (argc != 4) {
    fmt::print(stderr, "usage: lm_grad CHECKPOINT TEXT_FILE OUT.safetensors\n");
    return 2;
  }
  try {
    cpu::Backend cpu;
    const std::string path = argv[1];
    llama::LmTrainer t(llama::LmTrainer::checkpoint_options(path), cpu,
                       llama::LmTrainer::checkpoint_tokenizer(path));
    t.load(path);
    std::ifstream in(argv[2], std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)),
                           std::istreambuf_iterator<char>());
    const tokenizer::Tokenizer tok =
        tokenizer::Tokenizer::from_gguf(t.tokenizer());
    const std::vector<int32_t> stream = tok.encode(text, true, false);
    const Tensor ids = t.batch(stream, t.steps(), 0);
    std::vector<Tensor> params;
    std::vector<std::string> names;
    for (const nn::NamedTensor& p : t.model().named_parameters()) {
      params.push_back(*p.tensor);
      names.push_back(p.name);
    }
    const Tensor loss = t.model().loss(ids);
    const std::vector<Tensor> grads = autodiff::grad({loss}, params);
    std::map<std::string, Tensor> out;
    out["ids"] = from_vector(ids.to_vector<int32_t>(), ids.shape(), cpu);
    out["loss"] =
        from_vector(std::vector<float>{loss.item<float>()}, Shape{1}, cpu);
    for (size_t i = 0; i < grads.size(); ++i) {
      out["grad." + names[i]] =
          from_vector(grads[i].to_vector<float>(), grads[i].shape(), cpu);
    }
    const llama::Config c = t.options().config();
    io::save_safetensors(
        argv[3], out,
        {{"rms_eps", fmt::format("{:.17g}", c.rms_eps)},
         {"rope_base", fmt::format("{:.17g}", c.rope_freq_base)}});
  } catch (const Error& e) {
    fmt::print(stderr, "lm_grad: {}\n", e.what());
    return 1;
  }
  return 0;
}
