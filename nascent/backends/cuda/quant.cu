// The quant family on the GPU: dequantize and qmatmul of weights stored as
// GGML blocks (core/quant.h, quant/blocks.h).
//
// dequantize gives each thread one output value: it finds the value's
// block, reads the block's scales and its quant bits byte by byte (rows may
// start at any byte offset) and decodes with the float operations of the
// reference decoders (quant/legacy.cpp, quant/kquants.cpp) in the same
// order. The _rn intrinsics keep nvcc from fusing a multiply and an add,
// which the reference never does, so results match the CPU bit for bit.
//
// qmatmul decodes panels of weight rows into an f32 scratch buffer (from
// the caching allocator; a panel is at most kPanelFloats values, so a large
// vocabulary matrix never needs its full f32 copy) and multiplies through
// cuBLASLt, y[:, panel] = x @ panel^T, in f32 (TF32 only if allowed). x is
// not quantized as the CPU's kernels do: the product is the exact one of
// the decoded weights up to f32 rounding.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "nascent/backends/cuda/device.cuh"
#include "nascent/backends/cuda/gemm.h"
#include "nascent/core/ops.h"
#include "nascent/quant/blocks.h"
#include "nascent/quant/codec.h"

namespace nascent::cuda {

namespace {

// f32 values of one decoded panel at most (64 MiB).
constexpr int64_t kPanelFloats = int64_t(1) << 24;

NASCENT_D uint32_t u16(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8);
}
NASCENT_D uint32_t u32(const uint8_t* p) {
  return u16(p) | (u16(p + 2) << 16);
}
NASCENT_D float f16(const uint8_t* p) {
  return __half2float(__ushort_as_half(uint16_t(u16(p))));
}
NASCENT_D float mul(float a, float b) {
  return __fmul_rn(a, b);
}
// a * b + c and a * b - c, rounded twice as the reference computes them.
NASCENT_D float mul_add(float a, float b, float c) {
  return __fadd_rn(__fmul_rn(a, b), c);
}
NASCENT_D float mul_sub(float a, float b, float c) {
  return __fsub_rn(__fmul_rn(a, b), c);
}

// The 4-bit quant j (0..31) of a 32-value block: low nibbles first.
NASCENT_D int nibble32(const uint8_t* qs, int j) {
  return j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4;
}
// Bit 4 of the 5-bit quant j of q5_0 / q5_1 (qh a little-endian u32).
NASCENT_D int high_bit5(const uint8_t* qh, int j) {
  return int((u32(qh) >> j) & 1) << 4;
}

// quant/blocks.h's kquant_scale_min and q3k_scale, on the device.
NASCENT_D void scale_min_k4(const uint8_t* scales, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = (scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4);
    *m = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
}
NASCENT_D int scale_q3k(const uint8_t* scales, int j) {
  const int low = j < 8 ? scales[j] & 0xF : scales[j - 8] >> 4;
  const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
  return low | (high << 4);
}

#define NASCENT_AT(Block, field) (b + offsetof(Block, field))

// Value j of the block at b.
template <QuantType T>
NASCENT_D float decode(const uint8_t* b, int j) {
  if constexpr (T == QuantType::f32) {
    return __uint_as_float(u32(b));
  } else if constexpr (T == QuantType::f16) {
    return f16(b);
  } else if constexpr (T == QuantType::bf16) {
    return __uint_as_float(u16(b) << 16);
  } else if constexpr (T == QuantType::q4_0) {
    const int q = nibble32(NASCENT_AT(quant::BlockQ4_0, qs), j);
    return mul(float(q - 8), f16(NASCENT_AT(quant::BlockQ4_0, d)));
  } else if constexpr (T == QuantType::q4_1) {
    const int q = nibble32(NASCENT_AT(quant::BlockQ4_1, qs), j);
    return mul_add(float(q), f16(NASCENT_AT(quant::BlockQ4_1, d)),
                   f16(NASCENT_AT(quant::BlockQ4_1, m)));
  } else if constexpr (T == QuantType::q5_0) {
    const int q = nibble32(NASCENT_AT(quant::BlockQ5_0, qs), j) |
                  high_bit5(NASCENT_AT(quant::BlockQ5_0, qh), j);
    return mul(float(q - 16), f16(NASCENT_AT(quant::BlockQ5_0, d)));
  } else if constexpr (T == QuantType::q5_1) {
    const int q = nibble32(NASCENT_AT(quant::BlockQ5_1, qs), j) |
                  high_bit5(NASCENT_AT(quant::BlockQ5_1, qh), j);
    return mul_add(float(q), f16(NASCENT_AT(quant::BlockQ5_1, d)),
                   f16(NASCENT_AT(quant::BlockQ5_1, m)));
  } else if constexpr (T == QuantType::q8_0) {
    const auto q = int8_t(NASCENT_AT(quant::BlockQ8_0, qs)[j]);
    return mul(float(q), f16(NASCENT_AT(quant::BlockQ8_0, d)));
  } else if constexpr (T == QuantType::q2_k) {
    // Sub-block s (16 values): bits 2 (s / 2 % 4) of qs[32 (s / 8) +
    // 16 (s % 2) + l].
    const int s = j / 16, l = j % 16;
    const int sc = NASCENT_AT(quant::BlockQ2_K, scales)[s];
    const float dl = mul(f16(NASCENT_AT(quant::BlockQ2_K, d)), float(sc & 0xF));
    const float ml =
        mul(f16(NASCENT_AT(quant::BlockQ2_K, dmin)), float(sc >> 4));
    const int q =
        (NASCENT_AT(quant::BlockQ2_K, qs)[32 * (s / 8) + 16 * (s % 2) + l] >>
         (2 * (s / 2 % 4))) &
        3;
    return mul_sub(dl, float(q), ml);
  } else if constexpr (T == QuantType::q3_k) {
    const int s = j / 16, l = 16 * (s % 2) + j % 16;
    const float dl =
        mul(f16(NASCENT_AT(quant::BlockQ3_K, d)),
            float(scale_q3k(NASCENT_AT(quant::BlockQ3_K, scales), s) - 32));
    const int low = (NASCENT_AT(quant::BlockQ3_K, qs)[32 * (s / 8) + l] >>
                     (2 * (s / 2 % 4))) &
                    3;
    const bool high =
        (NASCENT_AT(quant::BlockQ3_K, hmask)[l] & (1 << (s / 2))) != 0;
    return mul(dl, float(low - (high ? 0 : 4)));
  } else if constexpr (T == QuantType::q4_k || T == QuantType::q5_k) {
    using Block = std::conditional_t<T == QuantType::q4_k, quant::BlockQ4_K,
                                     quant::BlockQ5_K>;
    const int s = j / 32, l = j % 32;
    int sc, m;
    scale_min_k4(NASCENT_AT(Block, scales), s, &sc, &m);
    const float d1 = mul(f16(NASCENT_AT(Block, d)), float(sc));
    const float m1 = mul(f16(NASCENT_AT(Block, dmin)), float(m));
    int q = (NASCENT_AT(Block, qs)[32 * (s / 2) + l] >> (4 * (s % 2))) & 0xF;
    if constexpr (T == QuantType::q5_k) {
      q |= ((NASCENT_AT(quant::BlockQ5_K, qh)[l] >> s) & 1) << 4;
    }
    return mul_sub(d1, float(q), m1);
  } else if constexpr (T == QuantType::q6_k) {
    // Value 128 h + 32 k + l: nibble k / 2 of ql[64 h + 32 (k % 2) + l],
    // bits 2 k of qh[32 h + l]; scale 8 h + 2 k + l / 16.
    const int h = j / 128, k = j % 128 / 32, l = j % 32;
    const int low =
        (NASCENT_AT(quant::BlockQ6_K, ql)[64 * h + 32 * (k % 2) + l] >>
         (4 * (k / 2))) &
        0xF;
    const int high =
        (NASCENT_AT(quant::BlockQ6_K, qh)[32 * h + l] >> (2 * k)) & 3;
    const int q = (low | (high << 4)) - 32;
    const auto sc =
        int8_t(NASCENT_AT(quant::BlockQ6_K, scales)[8 * h + 2 * k + l / 16]);
    return mul(mul(f16(NASCENT_AT(quant::BlockQ6_K, d)), float(sc)), float(q));
  } else {
    static_assert(T == QuantType::q8_k);
    const auto q = int8_t(NASCENT_AT(quant::BlockQ8_K, qs)[j]);
    return mul(__uint_as_float(u32(NASCENT_AT(quant::BlockQ8_K, d))), float(q));
  }
}

#undef NASCENT_AT

// y[r][c] (row stride k) = value c of weight row r (row stride ws bytes).
template <QuantType T, int kBlockSize, int kBlockBytes>
__global__ void dequantize_kernel(const uint8_t* w, int64_t ws, int64_t rows,
                                  int64_t k, float* y) {
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const uint8_t* row = w + r * ws;
    float* out = y + r * k;
    for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < k;
         c += int64_t(gridDim.x) * blockDim.x) {
      out[c] =
          decode<T>(row + c / kBlockSize * kBlockBytes, int(c % kBlockSize));
    }
  }
}

template <QuantType T, class Block>
void launch_blocks(Context& ctx, const uint8_t* w, int64_t ws, int64_t rows,
                   int64_t k, float* y, int block_size) {
  constexpr int kThreads = 256;
  const dim3 grid(grid_for(k, kThreads, 64),
                  unsigned(std::min<int64_t>(rows, 65535)));
  if (block_size == 1) {
    dequantize_kernel<T, 1, int(sizeof(Block))>
        <<<grid, kThreads, 0, ctx.stream>>>(w, ws, rows, k, y);
  } else if (block_size == quant::kQK) {
    dequantize_kernel<T, quant::kQK, int(sizeof(Block))>
        <<<grid, kThreads, 0, ctx.stream>>>(w, ws, rows, k, y);
  } else {
    dequantize_kernel<T, quant::kQK_K, int(sizeof(Block))>
        <<<grid, kThreads, 0, ctx.stream>>>(w, ws, rows, k, y);
  }
  check_launch("dequantize");
}

// Decodes `rows` weight rows of k values into y (row stride k), on the
// stream.
void dequantize_rows(Context& ctx, QuantType type, const uint8_t* w, int64_t ws,
                     int64_t rows, int64_t k, float* y) {
  if (rows == 0 || k == 0) return;
  const int bs = int(block_size(type));
  switch (type) {
    case QuantType::f32:
      return launch_blocks<QuantType::f32, float>(ctx, w, ws, rows, k, y, bs);
    case QuantType::f16:
      return launch_blocks<QuantType::f16, uint16_t>(ctx, w, ws, rows, k, y,
                                                     bs);
    case QuantType::bf16:
      return launch_blocks<QuantType::bf16, uint16_t>(ctx, w, ws, rows, k, y,
                                                      bs);
    case QuantType::q4_0:
      return launch_blocks<QuantType::q4_0, quant::BlockQ4_0>(ctx, w, ws, rows,
                                                              k, y, bs);
    case QuantType::q4_1:
      return launch_blocks<QuantType::q4_1, quant::BlockQ4_1>(ctx, w, ws, rows,
                                                              k, y, bs);
    case QuantType::q5_0:
      return launch_blocks<QuantType::q5_0, quant::BlockQ5_0>(ctx, w, ws, rows,
                                                              k, y, bs);
    case QuantType::q5_1:
      return launch_blocks<QuantType::q5_1, quant::BlockQ5_1>(ctx, w, ws, rows,
                                                              k, y, bs);
    case QuantType::q8_0:
      return launch_blocks<QuantType::q8_0, quant::BlockQ8_0>(ctx, w, ws, rows,
                                                              k, y, bs);
    case QuantType::q2_k:
      return launch_blocks<QuantType::q2_k, quant::BlockQ2_K>(ctx, w, ws, rows,
                                                              k, y, bs);
    case QuantType::q3_k:
      return launch_blocks<QuantType::q3_k, quant::BlockQ3_K>(ctx, w, ws, rows,
                                                              k, y, bs);
    case QuantType::q4_k:
      return launch_blocks<QuantType::q4_k, quant::BlockQ4_K>(ctx, w, ws, rows,
                                                              k, y, bs);
    case QuantType::q5_k:
      return launch_blocks<QuantType::q5_k, quant::BlockQ5_K>(ctx, w, ws, rows,
                                                              k, y, bs);
    case QuantType::q6_k:
      return launch_blocks<QuantType::q6_k, quant::BlockQ6_K>(ctx, w, ws, rows,
                                                              k, y, bs);
    case QuantType::q8_k:
      return launch_blocks<QuantType::q8_k, quant::BlockQ8_K>(ctx, w, ws, rows,
                                                              k, y, bs);
  }
}

}  // namespace

void Backend::quant(QuantOp op, const Tensor* x,
                    std::span<const QuantArg> args) {
  // qembedding: the default's index_select of the rows, then dequantize.
  if (op == QuantOp::qembedding) return nascent::Backend::quant(op, x, args);
  if (op == QuantOp::quantize) {
    // The reference quantizers on the host (quantizing is a file tool's
    // job, not a hot path): x comes back, the blocks go up.
    const QuantArg& a = args[0];
    const int64_t rows = x->shape(0), k = x->shape(1);
    const int64_t bytes = a.out->shape(1);
    const std::vector<float> values = x->to_vector<float>();
    std::vector<uint8_t> blocks(size_t(rows * bytes));
    for (int64_t r = 0; r < rows; ++r) {
      quant::quantize_row(a.type, values.data() + r * k,
                          blocks.data() + r * bytes, k);
    }
    copy(from_data(blocks.data(), {rows, bytes}, DType::u8, *this), *a.out);
    return;
  }
  DeviceGuard guard(ctx_->device);
  Context& ctx = *ctx_;
  for (const QuantArg& arg : args) {
    const Tensor& w = *arg.w;
    Tensor& out = *arg.out;
    const QuantType type = arg.type;
    const auto* wp = reinterpret_cast<const uint8_t*>(byte_ptr(w));
    const int64_t n = w.shape(0), ws = w.strides()[0];
    float* y = data_ptr<float>(out);

    if (op == QuantOp::dequantize) {
      dequantize_rows(ctx, type, wp, ws, n, out.shape(1), y);
      continue;
    }

    const int64_t m = x->shape(0), k = x->shape(1);
    if (m == 0 || n == 0) continue;
    const int64_t panel_rows = std::min(
        n, std::max<int64_t>(1, kPanelFloats / std::max<int64_t>(k, 1)));
    // One buffer for every panel: the stream orders each panel's decode
    // after the previous panel's product.
    const Tensor panel = scratch(*this, {panel_rows, k}, DType::f32);
    float* pp = data_ptr<float>(panel);
    const MatrixRef a{data_ptr<float>(*x), k, 1, 0};
    for (int64_t p0 = 0; p0 < n; p0 += panel_rows) {
      const int64_t rows = std::min(panel_rows, n - p0);
      dequantize_rows(ctx, type, wp + p0 * ws, ws, rows, k, pp);
      // B [k, rows] = panel^T: element (p, j) is panel[j][p].
      const MatrixRef b{pp, 1, k, 0};
      gemm(ctx, DType::f32, 1, m, rows, k, a, b, y + p0, n, 0);
    }
  }
}

}  // namespace nascent::cuda
