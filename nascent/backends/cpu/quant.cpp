// The quant family on the CPU: qmatmul (x @ W^T with W in GGML blocks,
// read in place, e.g. from a mapped file) and dequantize.
//
// qmatmul quantizes x once per call (x is small next to W) and splits the
// weight rows over the threads: each thread streams its share of W exactly
// once, whatever the number of x rows (quant/tiles-inl.h's tiles), which is
// what generation (one x row, W far larger than the caches) needs.
#include <algorithm>
#include <atomic>
#include <vector>

#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/cpu/balanced.h"
#include "nascent/backends/cpu/gemm/xwt.h"
#include "nascent/backends/cpu/quant/fused.h"
#include "nascent/backends/cpu/quant/kernels.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/quant/codec.h"

namespace nascent::cpu {

namespace {

// Weight bytes below which a task is not worth a thread (~10 us of
// streaming), and rows per task at least (the kernels' tile).
constexpr int64_t kTaskBytes = 1 << 17;
constexpr int64_t kTileRows = 16;
// x rows from which decoding each weight row once into an int16 panel
// (quant/gemm_simd.cpp) beats the dot kernels, which unpack each weight
// block once per four rows of x; and the same for float weights, whose f32
// GEMM packs W (quant_bench --mat-mat --rows 8,16,32,64 on AVX-512 VNNI:
// the dots were ahead at 16 rows for every block type and at 32 for f16).
constexpr int64_t kGemmRows = 16;
constexpr int64_t kFloatGemmRows = 64;

int64_t row_grain(int64_t row_bytes) {
  const int64_t rows =
      std::max<int64_t>(1, kTaskBytes / std::max<int64_t>(row_bytes, 1));
  return (rows + kTileRows - 1) / kTileRows * kTileRows;
}

bool cpu_has_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = __builtin_cpu_supports("avx512vnni");
  return has;
#else
  return false;
#endif
}

std::atomic<bool> vnni_allowed{true};

bool is_float_type(QuantType type) {
  return type == QuantType::f32 || type == QuantType::f16 ||
         type == QuantType::bf16;
}

// Quantized x, reused between calls on the calling thread.
struct ActivationScratch {
  std::vector<int16_t> q;
  std::vector<float> d;
  std::vector<int32_t> sums;
  std::vector<int16_t> sums32;
  std::vector<int8_t> q8;
  std::vector<int16_t> sums16;
};

QuantizedRows quantize_x(const float* x, int64_t m, int64_t k, int64_t block) {
  // One per block size: a fused product may hold x quantized both ways.
  thread_local ActivationScratch scratch[2];
  ActivationScratch& s = scratch[block == 32 ? 0 : 1];
  s.q.resize(size_t(m * k));
  s.d.resize(size_t(m * (k / block)));
  s.sums.resize(size_t(m * (k / 16)));
  s.sums32.resize(size_t(m * (k / 32)));
  s.q8.resize(size_t(m * k));
  s.sums16.resize(size_t(m * (k / 16)));
  // Rows of x are independent; a prompt's worth is worth the threads. (The
  // workers get plain pointers: `s` inside the lambda would name their own
  // thread_local scratch.)
  int16_t* q = s.q.data();
  float* d = s.d.data();
  int32_t* sums = s.sums.data();
  int16_t* sums32 = s.sums32.data();
  int8_t* q8 = s.q8.data();
  int16_t* sums16 = s.sums16.data();
  parallel_for(m, std::max<int64_t>(1, 16384 / std::max<int64_t>(k, 1)),
               [=](int64_t r0, int64_t r1) {
                 quantize_activations(x, k, block, r0, r1, q, d, sums, sums32,
                                      q8, sums16);
               });
  return QuantizedRows{m, k, block, q, d, sums, sums32, q8, sums16};
}

// Float weights with many x rows: the f32 GEMM micro-kernel, W widened
// while it is packed (gemm/xwt_simd.cpp, which threads itself).
void float_gemm(QuantType type, const uint8_t* w, int64_t ws, int64_t n,
                const float* x, int64_t m, int64_t k, float* y) {
  const DType dtype = type == QuantType::f16    ? DType::f16
                      : type == QuantType::bf16 ? DType::bf16
                                                : DType::f32;
  const int64_t ldw = ws / int64_t(size_of(dtype));
  gemm_xwt(dtype, x, k, w, ldw, y, n, m, n, k);
}

// y [m, n] = x @ W^T for x quantized (xq, for a block type).
void qmatmul_quantized(QuantType type, const uint8_t* wp, int64_t ws, int64_t n,
                       const QuantizedRows& xq, float* y) {
  if (xq.rows >= kGemmRows) {
    balanced_for((n + kTileRows - 1) / kTileRows, 1,
                 [&](int64_t t0, int64_t t1) {
                   qgemm_rows(type, wp, ws, t0 * kTileRows,
                              std::min(n, t1 * kTileRows), xq, y, n);
                 });
    return;
  }
  balanced_for(n, row_grain(ws), [&](int64_t j0, int64_t j1) {
    qdot_rows(type, wp, ws, j0, j1, xq, y, n);
  });
}

// y [m, n] = x [m, k] @ W^T, W = n rows of `type` at w (row stride ws).
void qmatmul_rows(QuantType type, const uint8_t* wp, int64_t ws, int64_t n,
                  const float* xp, int64_t m, int64_t k, float* y) {
  const int64_t grain = row_grain(ws);
  if (is_float_type(type) && m >= kFloatGemmRows) {
    float_gemm(type, wp, ws, n, xp, m, k, y);
    return;
  }
  if (is_float_type(type)) {
    balanced_for(n, grain, [&](int64_t j0, int64_t j1) {
      fdot_rows(type, wp, ws, j0, j1, xp, m, k, y, n);
    });
    return;
  }
  qmatmul_quantized(type, wp, ws, n,
                    quantize_x(xp, m, k, activation_block(type)), y);
}

}  // namespace

void qmatmul_fused(const float* x, int64_t m, int64_t k,
                   std::span<const QLinear> ms) {
  if (m >= kGemmRows) {
    // x quantized once per activation block size, not once per matrix.
    QuantizedRows xq[2];
    bool have[2] = {false, false};
    for (const QLinear& l : ms) {
      const int64_t block = activation_block(l.type);
      if (block == 0) {
        qmatmul_rows(l.type, l.w, l.ws, l.n, x, m, k, l.y);
        continue;
      }
      const int i = block == 32 ? 0 : 1;
      if (!have[i]) {
        xq[i] = quantize_x(x, m, k, block);
        have[i] = true;
      }
      qmatmul_quantized(l.type, l.w, l.ws, l.n, xq[i], l.y);
    }
    return;
  }
  // x quantized for each block size in use, before the job.
  QuantizedRows xq[2];
  bool have[2] = {false, false};
  int64_t tiles = 0, bytes = 0;
  for (const QLinear& l : ms) {
    const int64_t block = activation_block(l.type);
    const int i = block == 32 ? 0 : 1;
    if (block != 0 && !have[i]) {
      xq[i] = quantize_x(x, m, k, block);
      have[i] = true;
    }
    tiles += (l.n + kTileRows - 1) / kTileRows;
    bytes += l.n * l.ws;
  }
  if (tiles == 0) return;
  // Tiles of kTileRows rows of every matrix in turn, cut into tasks of about
  // kTaskBytes of weights.
  const int64_t grain =
      std::max<int64_t>(1, kTaskBytes / std::max<int64_t>(1, bytes / tiles));
  balanced_for(tiles, grain, [&](int64_t t0, int64_t t1) {
    int64_t first = 0;  // The matrix's first tile in the global numbering.
    for (const QLinear& l : ms) {
      const int64_t nt = (l.n + kTileRows - 1) / kTileRows;
      const int64_t a = std::max(t0, first), b = std::min(t1, first + nt);
      if (a < b) {
        const int64_t j0 = (a - first) * kTileRows;
        const int64_t j1 = std::min(l.n, (b - first) * kTileRows);
        const int64_t block = activation_block(l.type);
        if (block == 0) {
          fdot_rows(l.type, l.w, l.ws, j0, j1, x, m, k, l.y, l.n);
        } else {
          qdot_rows(l.type, l.w, l.ws, j0, j1, xq[block == 32 ? 0 : 1], l.y,
                    l.n);
        }
      }
      first += nt;
    }
  });
}

std::vector<float> activation_group_terms(const QuantizedRows& x,
                                          int64_t group) {
  const int64_t k = x.k, ngroups = group > 0 ? k / group : 0;
  std::vector<float> out(size_t(x.rows * ngroups));
  for (int64_t i = 0; i < x.rows; ++i) {
    for (int64_t g = 0; g < ngroups; ++g) {
      const int64_t first = g * group;
      const int32_t* sums = x.sums + i * (k / 16) + first / 16;
      const int32_t sum = group == 32 ? sums[0] + sums[1] : sums[0];
      out[size_t(i * ngroups + g)] =
          x.d[i * (k / x.block) + first / x.block] * float(sum);
    }
  }
  return out;
}

int64_t activation_block(QuantType type) {
  switch (type) {
    case QuantType::f32:
    case QuantType::f16:
    case QuantType::bf16:
      return 0;
    case QuantType::q4_0:
    case QuantType::q4_1:
    case QuantType::q5_0:
    case QuantType::q5_1:
    case QuantType::q8_0:
      return 32;
    default:
      return 256;
  }
}

bool vnni_enabled() {
  return cpu_has_vnni() && vnni_allowed.load(std::memory_order_relaxed);
}

void set_vnni_for_test(bool enabled) {
  vnni_allowed.store(enabled);
}

void qdot_rows(QuantType type, const uint8_t* w, int64_t ws, int64_t j0,
               int64_t j1, const QuantizedRows& x, float* y, int64_t ldy) {
  if (activation_block(type) == 32) {
    qdot_rows32(type, w, ws, j0, j1, x, y, ldy);
  } else {
    qdot_rows_k(type, w, ws, j0, j1, x, y, ldy);
  }
}

void dequantize_rows(QuantType type, const uint8_t* w, int64_t ws, int64_t rows,
                     int64_t k, float* out) {
  for (int64_t r = 0; r < rows; ++r)
    quant::dequantize_row(type, w + r * ws, out + r * k, k);
}

// Float weights (f32, f16, bf16) take any number of rows: widening and
// packing a weight panel costs ~10% of its products with 128 rows, ~2.5%
// with 512 (gemm_xwt.cpp), and their files are large enough that a model's
// intermediates (~40 MiB for 512 rows of a 1B FFN) are a small share. The
// block types decode their panels per call too, but 128 rows already keep
// the mat-mat kernels busy and bound the intermediates.
int64_t Backend::qmatmul_block_rows(QuantType type) const {
  return block_size(type) == 1 ? 0 : 128;
}

void Backend::quant(QuantOp op, const Tensor* x,
                    std::span<const QuantArg> args) {
  if (op == QuantOp::qmatmul && args.size() > 1 && fused_) {
    std::vector<QLinear> ls;
    for (const QuantArg& a : args) {
      ls.push_back({a.type, reinterpret_cast<const uint8_t*>(byte_ptr(*a.w)),
                    a.w->strides()[0], a.w->shape(0), data_ptr<float>(*a.out)});
    }
    qmatmul_fused(data_ptr<const float>(*x), x->shape(0), x->shape(1), ls);
    return;
  }
  if (op == QuantOp::quantize) {
    const QuantArg& a = args[0];
    const float* xp = data_ptr<const float>(*x);
    auto* y = reinterpret_cast<uint8_t*>(byte_ptr(*a.out));
    const int64_t k = x->shape(1), bytes = a.out->shape(1);
    // Small chunks taken in turn: the k-quant searches cost more on some
    // rows than on others.
    parallel_for(x->shape(0),
                 std::max<int64_t>(1, 16384 / std::max<int64_t>(k, 1)),
                 [&](int64_t r0, int64_t r1) {
                   for (int64_t r = r0; r < r1; ++r) {
                     quant::quantize_row(a.type, xp + r * k, y + r * bytes, k);
                   }
                 });
    return;
  }
  for (const QuantArg& a : args) {
    const Tensor& w = *a.w;
    const auto* wp = reinterpret_cast<const uint8_t*>(byte_ptr(w));
    const int64_t ws = w.strides()[0];
    const int64_t grain = row_grain(w.shape(1));
    float* y = data_ptr<float>(*a.out);
    switch (op) {
      case QuantOp::dequantize: {
        const int64_t n = w.shape(0), k = a.out->shape(1);
        balanced_for(n, grain, [&](int64_t r0, int64_t r1) {
          dequantize_rows(a.type, wp + r0 * ws, ws, r1 - r0, k, y + r0 * k);
        });
        break;
      }
      case QuantOp::qembedding: {
        if (!fused_) return nascent::Backend::quant(op, x, args);
        // The rows of the ids, decoded in place from the weight.
        const int64_t* ids = data_ptr<const int64_t>(*x);
        const int64_t n = x->numel(), k = a.out->shape(1);
        const int64_t is = x->strides()[0];
        parallel_for(n, std::max<int64_t>(1, 16384 / std::max<int64_t>(k, 1)),
                     [&](int64_t r0, int64_t r1) {
                       for (int64_t r = r0; r < r1; ++r) {
                         quant::dequantize_row(a.type, wp + ids[r * is] * ws,
                                               y + r * k, k);
                       }
                     });
        break;
      }
      case QuantOp::qmatmul:
        qmatmul_rows(a.type, wp, ws, w.shape(0), data_ptr<float>(*x),
                     x->shape(0), x->shape(1), y);
        break;
      case QuantOp::quantize:
        break;  // Above.
    }
  }
}

}  // namespace nascent::cpu
