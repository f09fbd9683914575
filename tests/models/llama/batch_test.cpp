// llama::Model::forward_batch: several sequences (KV-cache slots) in one
// step give the logits each gives alone and the float64 reference gives,
// prompt chunks beside decode tokens, batches split at 512 tokens, slots
// that do not see each other, a slot reused after truncation, and bad
// batches refused before any cache changes. On the CPU with its fused
// kernels and with them hidden (core's composed defaults).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "nascent/backends/cpu/backend.h"
#include "nascent/core/ops.h"
#include "nascent/models/llama/model.h"
#include "tests/io/test_files.h"
#include "tests/models/llama/test_model.h"

namespace nascent::test {
namespace {

using llama::SeqChunk;
using Rows = std::vector<std::vector<double>>;

std::vector<Backend*> backends() {
  static cpu::Backend fused;
  static cpu::Backend composed(cpu::Options{.fused = false});
  return {&fused, &composed};
}

std::vector<int32_t> random_tokens(size_t n, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, int32_t(vocab - 1));
  std::vector<int32_t> t(n);
  for (auto& id : t) id = dist(rng);
  return t;
}

Rows rows_of(const Tensor& logits, int64_t first = 0, int64_t count = -1) {
  const std::vector<float> v = logits.to_vector<float>();
  const int64_t vocab = logits.shape(1);
  if (count < 0) count = logits.shape(0) - first;
  Rows out(static_cast<size_t>(count));
  for (int64_t r = 0; r < count; ++r) {
    out[size_t(r)].assign(v.begin() + (first + r) * vocab,
                          v.begin() + (first + r + 1) * vocab);
  }
  return out;
}

// Max |a - b| relative to the largest |b|.
double rel_error(const Rows& a, const Rows& b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0.0, scale = 1e-30;
  for (size_t r = 0; r < std::min(a.size(), b.size()); ++r) {
    for (size_t i = 0; i < std::min(a[r].size(), b[r].size()); ++i) {
      diff = std::max(diff, std::abs(a[r][i] - b[r][i]));
      scale = std::max(scale, std::abs(b[r][i]));
    }
  }
  return diff / scale;
}

Rows slice(const Rows& r, size_t first, size_t count) {
  return Rows(r.begin() + int64_t(first), r.begin() + int64_t(first + count));
}

class LlamaBatch : public ::testing::Test {
 protected:
  void SetUp() override {
    spec_.n_vocab = 61;
    spec_.n_ctx_train = 1024;
    write_model(spec_, path());
  }
  std::string path() const { return dir_.file("m.gguf"); }
  // The logits one sequence gets alone, all positions, in a model of one
  // slot.
  Rows solo(Backend& b, const std::vector<int32_t>& tokens) {
    auto m = llama::load(path(), b);
    return rows_of(m->forward(tokens, 0, llama::LogitsMode::all));
  }

  ModelSpec spec_;
  testing::TempDir dir_;
};

TEST_F(LlamaBatch, PromptsAndDecodesOfSeveralSlotsMatchEachAlone) {
  for (Backend* b : backends()) {
    SCOPED_TRACE(b->name());
    auto model = llama::load(path(), *b, {.n_seq = 4});
    EXPECT_EQ(model->n_seq(), 4);
    std::vector<std::vector<int32_t>> seqs;
    for (uint64_t i = 0; i < 3; ++i) {
      seqs.push_back(random_tokens(12 + 3 * i, spec_.n_vocab, 10 + i));
    }
    std::vector<Rows> want;
    for (const auto& s : seqs) want.push_back(solo(*b, s));
    // Step 1: slot 3 takes seq 0's first 5 tokens, slot 1 seq 1's first 9
    // (all logits), slot 0 seq 2's first 4 (last logit only).
    std::vector<SeqChunk> step1{
        {.seq = 3, .n_past = 0, .tokens = {seqs[0].data(), 5}, .n_logits = 5},
        {.seq = 1, .n_past = 0, .tokens = {seqs[1].data(), 9}, .n_logits = 9},
        {.seq = 0, .n_past = 0, .tokens = {seqs[2].data(), 4}, .n_logits = 1}};
    Tensor out = model->forward_batch(step1);
    ASSERT_EQ(out.shape(0), 15);
    EXPECT_LT(rel_error(rows_of(out, 0, 5), slice(want[0], 0, 5)), 1e-5);
    EXPECT_LT(rel_error(rows_of(out, 5, 9), slice(want[1], 0, 9)), 1e-5);
    EXPECT_LT(rel_error(rows_of(out, 14, 1), slice(want[2], 3, 1)), 1e-5);
    EXPECT_EQ(model->n_past(3), 5);
    EXPECT_EQ(model->n_past(1), 9);
    EXPECT_EQ(model->n_past(0), 4);
    EXPECT_EQ(model->n_past(2), 0);
    // Then one token at a time for seqs 0 and 1 (decode) beside the rest of
    // seq 2 as one chunk (its prompt), until every sequence is done.
    size_t pos[3] = {5, 9, 4};
    std::vector<SeqChunk> step{
        {.seq = 0,
         .n_past = 4,
         .tokens = {seqs[2].data() + 4, seqs[2].size() - 4},
         .n_logits = int64_t(seqs[2].size() - 4)}};
    out = model->forward_batch(step);
    EXPECT_LT(rel_error(rows_of(out), slice(want[2], 4, seqs[2].size() - 4)),
              1e-5);
    pos[2] = seqs[2].size();
    while (pos[0] < seqs[0].size() || pos[1] < seqs[1].size()) {
      std::vector<SeqChunk> dec;
      std::vector<int> which;
      for (int i : {1, 0}) {
        if (pos[i] >= seqs[size_t(i)].size()) continue;
        dec.push_back({.seq = i == 0 ? 3 : 1,
                       .n_past = int64_t(pos[i]),
                       .tokens = {seqs[size_t(i)].data() + pos[i], 1}});
        which.push_back(i);
      }
      out = model->forward_batch(dec);
      ASSERT_EQ(out.shape(0), int64_t(dec.size()));
      for (size_t k = 0; k < which.size(); ++k) {
        const int i = which[k];
        EXPECT_LT(rel_error(rows_of(out, int64_t(k), 1),
                            slice(want[size_t(i)], pos[i], 1)),
                  1e-5)
            << "sequence " << i << " position " << pos[i];
        ++pos[i];
      }
    }
    // The float64 reference, written apart from the model code.
    const Rows ref = reference_logits(path(), seqs[1]);
    EXPECT_LT(rel_error(want[1], ref), 5e-5);
  }
}

TEST_F(LlamaBatch, LongChunksSplitIntoBatchesOf512) {
  Backend& b = *backends()[0];
  auto model = llama::load(path(), b, {.n_seq = 2});
  const std::vector<int32_t> a = random_tokens(600, spec_.n_vocab, 3);
  const std::vector<int32_t> c = random_tokens(7, spec_.n_vocab, 4);
  const Rows wa = solo(b, a), wc = solo(b, c);
  // Slot 1 first (7 tokens), then 600 in slot 0: the first batch holds 7 +
  // 505, the second the last 95; logits of the last 100 of slot 0 span both.
  std::vector<SeqChunk> chunks{
      {.seq = 1, .n_past = 0, .tokens = c, .n_logits = 2},
      {.seq = 0, .n_past = 0, .tokens = a, .n_logits = 100}};
  const Tensor out = model->forward_batch(chunks);
  ASSERT_EQ(out.shape(0), 102);
  EXPECT_LT(rel_error(rows_of(out, 0, 2), slice(wc, 5, 2)), 1e-5);
  EXPECT_LT(rel_error(rows_of(out, 2, 100), slice(wa, 500, 100)), 1e-5);
  EXPECT_EQ(model->n_past(0), 600);
  EXPECT_EQ(model->n_past(1), 7);
  // No logits at all: nothing comes back, the cache still fills.
  const std::vector<int32_t> more{1, 2};
  const SeqChunk none{.seq = 1, .n_past = 7, .tokens = more, .n_logits = 0};
  EXPECT_FALSE(model->forward_batch({&none, 1}).defined());
  EXPECT_EQ(model->n_past(1), 9);
}

TEST_F(LlamaBatch, SlotsAreIndependentAndReusableAfterRelease) {
  for (Backend* b : backends()) {
    SCOPED_TRACE(b->name());
    auto model = llama::load(path(), *b, {.n_ctx = 64, .n_seq = 2});
    const std::vector<int32_t> x = random_tokens(20, spec_.n_vocab, 5);
    const std::vector<int32_t> y = random_tokens(9, spec_.n_vocab, 6);
    const std::vector<int32_t> z = random_tokens(14, spec_.n_vocab, 7);
    const Rows wx = solo(*b, x), wz = solo(*b, z);
    // Slot 0 holds x's first 15 tokens; slot 1 runs y, is released and
    // runs z while slot 0 continues: neither sees the other's keys.
    model->forward({x.data(), 15}, 0);
    const SeqChunk first{.seq = 1, .n_past = 0, .tokens = y};
    model->forward_batch({&first, 1});
    model->truncate(0, 1);
    EXPECT_EQ(model->n_past(1), 0);
    EXPECT_EQ(model->n_past(0), 15);
    std::vector<SeqChunk> chunks{
        {.seq = 1, .n_past = 0, .tokens = z, .n_logits = int64_t(z.size())},
        {.seq = 0, .n_past = 15, .tokens = {x.data() + 15, 5}, .n_logits = 5}};
    const Tensor out = model->forward_batch(chunks);
    EXPECT_LT(rel_error(rows_of(out, 0, 14), wz), 1e-5);
    EXPECT_LT(rel_error(rows_of(out, 14, 5), slice(wx, 15, 5)), 1e-5);
    // A prefix kept in a slot is reused: rewind slot 1 to 6 of z's tokens
    // and continue with them; the same as z from scratch.
    const SeqChunk rest{.seq = 1,
                        .n_past = 6,
                        .tokens = {z.data() + 6, z.size() - 6},
                        .n_logits = int64_t(z.size() - 6)};
    EXPECT_LT(
        rel_error(rows_of(model->forward_batch({&rest, 1})), slice(wz, 6, 8)),
        1e-5);
    model->reset();
    EXPECT_EQ(model->n_past(0), 0);
    EXPECT_EQ(model->n_past(1), 0);
  }
}

TEST_F(LlamaBatch, BadBatchesChangeNothing) {
  auto model = llama::load(path(), *backends()[0], {.n_ctx = 16, .n_seq = 2});
  const std::vector<int32_t> ok{1, 2, 3}, bad{1, 61};
  model->forward(ok, 0);
  auto expect = [&](std::vector<SeqChunk> chunks,
                    std::initializer_list<std::string> parts) {
    testing::expect_error<ValueError>([&] { model->forward_batch(chunks); },
                                      parts);
    EXPECT_EQ(model->n_past(0), 3);
    EXPECT_EQ(model->n_past(1), 0);
  };
  expect({}, {"no sequences"});
  expect({{.seq = 2, .tokens = ok}}, {"sequence 2", "[0, 2)"});
  expect({{.seq = -1, .tokens = ok}}, {"sequence -1"});
  // The valid chunk first: it must not run either.
  expect({{.seq = 0, .n_past = 0, .tokens = ok}, {.seq = 0, .tokens = ok}},
         {"sequence 0 appears twice"});
  expect({{.seq = 1, .n_past = 0, .tokens = ok}, {.seq = 0, .tokens = bad}},
         {"token id 61"});
  expect({{.seq = 1, .n_past = 1, .tokens = ok}}, {"n_past = 1", "0 cached"});
  expect({{.seq = 1, .tokens = ok, .n_logits = 4}}, {"n_logits = 4", "[0, 3]"});
  expect({{.seq = 1, .tokens = {}}}, {"at least one token"});
  const std::vector<int32_t> long_one(17, 1);
  expect({{.seq = 1, .tokens = long_one}}, {"17 tokens", "context of 16"});
  testing::expect_error<ValueError>([&] { model->n_past(2); }, {"sequence 2"});
  testing::expect_error<ValueError>([&] { model->truncate(1, 1); },
                                    {"truncate", "0 cached", "sequence 1"});
  testing::expect_error<ValueError>(
      [&] { llama::load(path(), *backends()[0], {.n_seq = 0}); },
      {"n_seq = 0"});
}

}  // namespace
}  // namespace nascent::test
