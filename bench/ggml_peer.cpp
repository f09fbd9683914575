#include "ggml_peer.h"

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

namespace nascent::bench {

// Weights live in the CPU device's first "extra" buffer type when there is
// one: the repacking buffer llama.cpp loads models into (interleaved rows
// for its AVX2 GEMMs, e.g. q4_K as 8 x 8), so the peer runs the kernels a
// llama.cpp model would.
struct GgmlMatmul::State {
  ggml_context* wctx = nullptr;  // Weights (no_alloc, backend buffers).
  ggml_context* ctx = nullptr;   // x, outputs, graphs.
  ggml_backend_t backend = nullptr;
  ggml_threadpool* pool = nullptr;
  std::vector<ggml_backend_buffer_t> buffers;
  std::vector<ggml_cgraph*> graphs;
};

namespace {

// The buffer type for weights of `type` in a product like `probe` (whose
// first source is the weight), as llama.cpp picks it at load: the first
// extra type whose kernels support the product, else the plain CPU one.
ggml_backend_buffer_type_t weight_buffer_type(ggml_tensor* probe) {
  ggml_backend_reg_t reg = ggml_backend_cpu_reg();
  ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, 0);
  auto get = reinterpret_cast<ggml_backend_dev_get_extra_bufts_t>(
      ggml_backend_reg_get_proc_address(reg,
                                        "ggml_backend_dev_get_extra_bufts"));
  if (get != nullptr) {
    for (ggml_backend_buffer_type_t* b = get(dev); b && *b; ++b) {
      ggml_backend_buffer_t dummy = ggml_backend_buft_alloc_buffer(*b, 0);
      probe->src[0]->buffer = dummy;
      const bool ok = ggml_backend_dev_supports_op(dev, probe);
      probe->src[0]->buffer = nullptr;
      ggml_backend_buffer_free(dummy);
      if (ok) return *b;
    }
  }
  return ggml_backend_dev_buffer_type(dev);
}

}  // namespace

GgmlMatmul::GgmlMatmul(uint32_t type_id, const uint8_t* w, int64_t n, int64_t k,
                       int64_t row_bytes, int64_t m, int copies, int threads)
    : s_(std::make_unique<State>()) {
  ggml_cpu_init();
  const size_t bytes = size_t(n * row_bytes);
  ggml_init_params wp{};
  wp.mem_size = size_t(copies + 1) * ggml_tensor_overhead();
  wp.no_alloc = true;
  s_->wctx = ggml_init(wp);
  ggml_init_params params{};
  params.mem_size =
      size_t(copies) * (ggml_graph_overhead() + 2 * ggml_tensor_overhead()) +
      ggml_tensor_overhead() + (1 << 20);
  params.no_alloc = true;
  s_->ctx = ggml_init(params);
  if (s_->ctx == nullptr || s_->wctx == nullptr) {
    throw std::runtime_error("ggml_init failed");
  }
  s_->backend = ggml_backend_cpu_init();
  ggml_backend_cpu_set_n_threads(s_->backend, threads);
  ggml_threadpool_params tp = ggml_threadpool_params_default(threads);
  s_->pool = ggml_threadpool_new(&tp);
  ggml_backend_cpu_set_threadpool(s_->backend, s_->pool);

  std::vector<ggml_tensor*> ws;
  for (int c = 0; c < copies; ++c) {
    ws.push_back(ggml_new_tensor_2d(
        s_->wctx, static_cast<enum ggml_type>(type_id), k, n));
  }
  ggml_tensor* x = ggml_new_tensor_2d(s_->ctx, GGML_TYPE_F32, k, m);
  for (int c = 0; c < copies; ++c) {
    ggml_cgraph* g = ggml_new_graph(s_->ctx);
    ggml_build_forward_expand(g, ggml_mul_mat(s_->ctx, ws[size_t(c)], x));
    s_->graphs.push_back(g);
  }
  s_->buffers.push_back(ggml_backend_alloc_ctx_tensors_from_buft(
      s_->wctx, weight_buffer_type(ggml_graph_node(s_->graphs[0], -1))));
  s_->buffers.push_back(ggml_backend_alloc_ctx_tensors(s_->ctx, s_->backend));
  for (ggml_tensor* t : ws) {
    if (ggml_nbytes(t) != bytes) throw std::runtime_error("ggml row size");
    ggml_backend_tensor_set(t, w, 0, bytes);
  }
  std::vector<float> xv(size_t(m * k));
  std::mt19937 rng(2);
  std::normal_distribution<float> normal;
  for (float& v : xv) v = normal(rng);
  ggml_backend_tensor_set(x, xv.data(), 0, xv.size() * 4);
}

GgmlMatmul::~GgmlMatmul() {
  for (ggml_backend_buffer_t b : s_->buffers) ggml_backend_buffer_free(b);
  ggml_backend_free(s_->backend);
  ggml_threadpool_free(s_->pool);
  ggml_free(s_->ctx);
  ggml_free(s_->wctx);
}

void GgmlMatmul::run(int copy) {
  ggml_backend_graph_compute(s_->backend, s_->graphs[size_t(copy)]);
}

}  // namespace nascent::bench
