// llama.cpp's own CPU kernels as a peer for quant_bench: ggml's mul_mat
// (from the llama-cpp-python wheel in build/venv, its libggml-cpu), on the
// same weight bytes, in the repacking buffer llama.cpp loads models into
// and through a persistent ggml thread pool, as llama.cpp runs them. Built only
// where that wheel is found (NASCENT_GGML_PEER).
#pragma once

#include <cstdint>
#include <memory>

namespace nascent::bench {

class GgmlMatmul {
 public:
  // y [m, n] = x [m, k] @ W^T for `copies` copies of W (rows of ggml type
  // `type_id`, `row_bytes` each), x random.
  GgmlMatmul(uint32_t type_id, const uint8_t* w, int64_t n, int64_t k,
             int64_t row_bytes, int64_t m, int copies, int threads);
  ~GgmlMatmul();
  GgmlMatmul(const GgmlMatmul&) = delete;
  GgmlMatmul& operator=(const GgmlMatmul&) = delete;

  // One product with copy `copy`.
  void run(int copy);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace nascent::bench
