// Loading a GGUF model and generating text, streamed as it is sampled.
//   generate_gguf model.gguf "Once upon a time" [n_tokens] [device]
// The continuation goes to stdout (what `nascent generate` prints with the
// same sampling options); the timings go to stderr. `nascent make-model
// tiny.gguf` writes a small random model to try it on.
#include <cstdio>
#include <string>

#include "nascent/backends/device.h"
#include "nascent/generate/generator.h"
#include "nascent/models/llama/model.h"
#include "nascent/tokenizer/tokenizer.h"

using namespace nascent;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s model.gguf PROMPT [N] [DEVICE]\n", argv[0]);
    return 2;
  }
  const int n = argc > 3 ? std::stoi(argv[3]) : 32;
  try {
    // [generate]
    std::unique_ptr<Backend> backend = make_backend(argc > 4 ? argv[4] : "cpu");
    std::shared_ptr<llama::Model> model = llama::load(argv[1], *backend);
    auto tok = tokenizer::Tokenizer::from_gguf(model->file().metadata());
    generate::GenerateOptions options;
    options.sampling = {
        .temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .seed = 1};
    options.max_tokens = n;
    generate::TextGenerator gen(model, tok, options);
    generate::GenerateResult r = gen.generate(argv[2], [](std::string_view s) {
      std::fwrite(s.data(), 1, s.size(), stdout);  // each piece as it comes
      std::fflush(stdout);
      return true;  // false stops the generation
    });
    // [generate]
    std::printf("\n");
    std::fprintf(stderr,
                 "%zu prompt tokens, %zu generated, %.1f tokens/s on %s\n",
                 r.prompt_tokens.size(), r.tokens.size(), r.tokens_per_s(),
                 describe_backend(*backend).c_str());
  } catch (const Error& e) {  // every layer's errors derive from it
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
