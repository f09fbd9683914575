#include "nascent/generate/perplexity.h"

#include <cmath>

#include <fmt/format.h>

#include "nascent/core/error.h"
#include "nascent/core/ops.h"

namespace nascent::generate {

PerplexityResult perplexity(
    llama::Model& model, const tokenizer::Tokenizer& tokenizer,
    std::string_view text, const PerplexityOptions& options,
    const std::function<void(int64_t, double)>& on_chunk) {
  const int64_t n_ctx = options.n_ctx > 0 ? options.n_ctx : model.n_ctx();
  if (n_ctx > model.n_ctx() || n_ctx < 4) {
    throw ValueError(fmt::format(
        "perplexity: a context of {} tokens; the model holds 4 to {}", n_ctx,
        model.n_ctx()));
  }
  std::vector<tokenizer::TokenId> tokens = tokenizer.encode(text, true, false);
  PerplexityResult r;
  r.tokens = int64_t(tokens.size());
  if (r.tokens < 2 * n_ctx) {
    throw ValueError(fmt::format(
        "perplexity: the text has {} tokens; a context of {} needs at least "
        "{}",
        r.tokens, n_ctx, 2 * n_ctx));
  }
  int64_t n_chunks = r.tokens / n_ctx;
  if (options.n_chunks > 0) n_chunks = std::min(n_chunks, options.n_chunks);
  const int64_t first = n_ctx / 2;
  const int64_t n_vocab = model.config().n_vocab;
  const bool add_bos = tokenizer.add_bos();
  double nll = 0.0, nll2 = 0.0;
  std::vector<int32_t> chunk(static_cast<size_t>(n_ctx));
  for (int64_t c = 0; c < n_chunks; ++c) {
    const auto begin = tokens.begin() + c * n_ctx;
    std::copy(begin, begin + n_ctx, chunk.begin());
    if (add_bos) chunk[0] = tokenizer.bos();
    model.reset();
    const std::vector<float> logits =
        model.forward(chunk, 0, llama::LogitsMode::all).to_vector<float>();
    for (int64_t j = first; j < n_ctx - 1; ++j) {
      const float* row = logits.data() + j * n_vocab;
      float max = row[0];
      for (int64_t v = 1; v < n_vocab; ++v) max = std::max(max, row[v]);
      double sum = 0.0;
      for (int64_t v = 0; v < n_vocab; ++v)
        sum += std::exp(double(row[v] - max));
      const int32_t target = begin[j + 1];
      const double v = std::log(sum) - double(row[target] - max);
      nll += v;
      nll2 += v * v;
    }
    r.scored += n_ctx - 1 - first;
    r.running.push_back(std::exp(nll / double(r.scored)));
    if (on_chunk) on_chunk(c + 1, r.running.back());
  }
  model.reset();
  r.chunks = n_chunks;
  const double mean = nll / double(r.scored);
  r.ppl = std::exp(mean);
  const double var = nll2 / double(r.scored) - mean * mean;
  r.uncertainty = var > 0 && r.scored > 1
                      ? std::sqrt(var / double(r.scored - 1)) * r.ppl
                      : 0.0;
  return r;
}

}  // namespace nascent::generate
