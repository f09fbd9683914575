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
// qmatmul with at most kMatVecMaxRows rows of x (decoding) goes to the
// mat-vec kernels (qmatvec.cu), which read the blocks in place. Larger x
// (prompts) multiplies on tensor cores in f16 for f16 weights and the block
// types. Each row of x is scaled by a power of two into f16's range; for f16
// weights it is split into two f16 parts (hi, and the rest: 22 bits of each
// value, as the CPU's f32 products keep), for the block types one part is
// enough (11 bits, where the CPU rounds x to 8). W is f16 (f16 rows in
// place, the block types decoded into f16 panels, within 2^-11 of their
// values), and one GEMM with f32 sums multiplies the parts, which a small
// kernel adds and unscales. f32 and bf16 weights decode panels of rows into
// an f32 scratch buffer (a panel is at most kPanelFloats values, so a
// large vocabulary matrix never needs its full copy) and multiply through
// cuBLASLt in f32 (TF32 only if allowed).
#include <algorithm>
#include <cstddef>
#include <vector>

#include "nascent/backends/cuda/device.cuh"
#include "nascent/backends/cuda/gemm.h"
#include "nascent/backends/cuda/qmatvec.h"
#include "nascent/backends/cuda/quant_blocks.cuh"
#include "nascent/backends/cuda/quant_pieces.cuh"
#include "nascent/core/ops.h"
#include "nascent/quant/blocks.h"
#include "nascent/quant/codec.h"

namespace nascent::cuda {

namespace {

using namespace blocks;

// f32 values of one decoded panel at most (64 MiB).
constexpr int64_t kPanelFloats = int64_t(1) << 24;

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

NASCENT_D void store(float* p, float v) {
  *p = v;
}
NASCENT_D void store(__half* p, float v) {
  *p = __float2half_rn(v);
}

// y[r][c] (row stride k) = value c of weight row r (row stride ws bytes),
// as float or rounded to half.
template <QuantType T, int kBlockSize, int kBlockBytes, class O>
__global__ void dequantize_kernel(const uint8_t* w, int64_t ws, int64_t rows,
                                  int64_t k, O* y) {
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const uint8_t* row = w + r * ws;
    O* out = y + r * k;
    for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < k;
         c += int64_t(gridDim.x) * blockDim.x) {
      store(out + c,
            decode<T>(row + c / kBlockSize * kBlockBytes, int(c % kBlockSize)));
    }
  }
}

template <QuantType T, class Block, class O>
void launch_blocks(Context& ctx, const uint8_t* w, int64_t ws, int64_t rows,
                   int64_t k, O* y, int block_size) {
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
template <class O>
void dequantize_rows(Context& ctx, QuantType type, const uint8_t* w, int64_t ws,
                     int64_t rows, int64_t k, O* y) {
  if (rows == 0 || k == 0) return;
  const int bs = int(block_size(type));
  switch (type) {
    case QuantType::f32:
      return launch_blocks<QuantType::f32, float, O>(ctx, w, ws, rows, k, y,
                                                     bs);
    case QuantType::f16:
      return launch_blocks<QuantType::f16, uint16_t, O>(ctx, w, ws, rows, k, y,
                                                        bs);
    case QuantType::bf16:
      return launch_blocks<QuantType::bf16, uint16_t, O>(ctx, w, ws, rows, k, y,
                                                         bs);
    case QuantType::q4_0:
      return launch_blocks<QuantType::q4_0, quant::BlockQ4_0, O>(
          ctx, w, ws, rows, k, y, bs);
    case QuantType::q4_1:
      return launch_blocks<QuantType::q4_1, quant::BlockQ4_1, O>(
          ctx, w, ws, rows, k, y, bs);
    case QuantType::q5_0:
      return launch_blocks<QuantType::q5_0, quant::BlockQ5_0, O>(
          ctx, w, ws, rows, k, y, bs);
    case QuantType::q5_1:
      return launch_blocks<QuantType::q5_1, quant::BlockQ5_1, O>(
          ctx, w, ws, rows, k, y, bs);
    case QuantType::q8_0:
      return launch_blocks<QuantType::q8_0, quant::BlockQ8_0, O>(
          ctx, w, ws, rows, k, y, bs);
    case QuantType::q2_k:
      return launch_blocks<QuantType::q2_k, quant::BlockQ2_K, O>(
          ctx, w, ws, rows, k, y, bs);
    case QuantType::q3_k:
      return launch_blocks<QuantType::q3_k, quant::BlockQ3_K, O>(
          ctx, w, ws, rows, k, y, bs);
    case QuantType::q4_k:
      return launch_blocks<QuantType::q4_k, quant::BlockQ4_K, O>(
          ctx, w, ws, rows, k, y, bs);
    case QuantType::q5_k:
      return launch_blocks<QuantType::q5_k, quant::BlockQ5_K, O>(
          ctx, w, ws, rows, k, y, bs);
    case QuantType::q6_k:
      return launch_blocks<QuantType::q6_k, quant::BlockQ6_K, O>(
          ctx, w, ws, rows, k, y, bs);
    case QuantType::q8_k:
      return launch_blocks<QuantType::q8_k, quant::BlockQ8_K, O>(
          ctx, w, ws, rows, k, y, bs);
  }
}

// Panel rows as f16 from pieces of 16 bytes (quant_pieces.cuh): a thread
// decodes one piece and stores its values eight at a time where two runs of
// four follow each other (four at a time otherwise), instead of one value a
// thread reading its block's scales again. A panel holds at most
// kPanelFloats values, so its pieces count in 32 bits, whose division is
// far cheaper than a 64-bit one.
template <QuantType T>
__global__ void dequantize_pieces_kernel(const uint8_t* w, int64_t ws, int rows,
                                         int k, __half* y) {
  using R = pieces::Rows<T>;
  static_assert(R::kX4 % 2 == 0, "runs of four values go in pairs");
  const int per_row = k / R::kValues, total = rows * per_row;
  for (int e = int(blockIdx.x * blockDim.x + threadIdx.x); e < total;
       e += int(gridDim.x * blockDim.x)) {
    const int r = e / per_row, g = e % per_row;
    float v[4 * R::kX4];
    R::values(R::load(w + r * ws, g), v);
    __half* out = y + int64_t(r) * k;
#pragma unroll
    for (int i = 0; i < R::kX4; i += 2) {
      uint32_t h[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const __half2 pair =
            __floats2half2_rn(v[4 * i + 2 * j], v[4 * i + 2 * j + 1]);
        h[j] = *reinterpret_cast<const uint32_t*>(&pair);
      }
      const int64_t c0 = R::x_col(g, i), c1 = R::x_col(g, i + 1);
      if (c1 == c0 + 4 && c0 % 8 == 0) {
        *reinterpret_cast<uint4*>(out + c0) =
            make_uint4(h[0], h[1], h[2], h[3]);
      } else {
        *reinterpret_cast<uint2*>(out + c0) = make_uint2(h[0], h[1]);
        *reinterpret_cast<uint2*>(out + c1) = make_uint2(h[2], h[3]);
      }
    }
  }
}

// Decodes panel rows to f16 through the pieces where the type has them and
// the rows are aligned for them, else value by value.
void dequantize_rows_half(Context& ctx, QuantType type, const uint8_t* w,
                          int64_t ws, int64_t rows, int64_t k, __half* y) {
  bool done = false;
  if (rows > 0 && pieces::reads(type, w, ws, k)) {
    pieces::with_rows(type, [&](auto t) {
      constexpr QuantType T = decltype(t)::value;
      if constexpr (pieces::kBlocks<T>) {
        const int64_t items = rows * (k / pieces::Rows<T>::kValues);
        dequantize_pieces_kernel<T>
            <<<grid_for(items, 256, 1 << 16), 256, 0, ctx.stream>>>(
                w, ws, int(rows), int(k), y);
        check_launch("qmatmul");
        done = true;
      }
    });
  }
  if (!done) dequantize_rows(ctx, type, w, ws, rows, k, y);
}

// x's rows, each scaled by a power of two that brings its largest value
// into [2^14, 2^15), as f16 parts: hi = f16(x s) and, with two parts, lo =
// f16(x s - hi), 22 bits of each value together. Rows [0, m) of xs hold
// hi, [m, 2m) lo; inv[r] = 1 / s.
__global__ void split_rows_kernel(const float* x, int64_t m, int64_t k,
                                  int count, __half* xs, float* inv) {
  __shared__ float top[32];
  const int64_t r = blockIdx.x;
  const float* row = x + r * k;
  float mx = 0.0f;
  for (int64_t c = threadIdx.x; c < k; c += blockDim.x) {
    mx = fmaxf(mx, fabsf(row[c]));
  }
  for (int o = 16; o > 0; o /= 2) {
    mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, o));
  }
  if (threadIdx.x % 32 == 0) top[threadIdx.x / 32] = mx;
  __syncthreads();
  mx = 0.0f;
  for (unsigned i = 0; i < blockDim.x / 32; ++i) mx = fmaxf(mx, top[i]);
  int e = 0;
  frexpf(mx, &e);  // mx = f 2^e, f in [0.5, 1)
  int shift = mx > 0.0f && isfinite(mx) ? 15 - e : 0;
  shift = shift < -126 ? -126 : (shift > 126 ? 126 : shift);
  const float scale = ldexpf(1.0f, shift);
  for (int64_t c = threadIdx.x; c < k; c += blockDim.x) {
    const float v = row[c] * scale;
    const __half hi = __float2half_rn(v);
    xs[r * k + c] = hi;
    if (count == 2) xs[(m + r) * k + c] = __float2half_rn(v - __half2float(hi));
  }
  if (threadIdx.x == 0) inv[r] = ldexpf(1.0f, -shift);
}

// y[r][c] = (hi product [+ lo product]) / s_r for the panel's columns:
// parts [count * m, cols] (row stride ldp; with one part it may be y
// itself). Rows are blockIdx.y, so no thread divides.
__global__ void join_parts_kernel(const float* parts, int64_t ldp, int count,
                                  const float* inv, int64_t m, int64_t cols,
                                  float* y, int64_t ldy) {
  for (int64_t r = blockIdx.y; r < m; r += gridDim.y) {
    const float* hi = parts + r * ldp;
    const float* lo = hi + m * ldp;
    const float s = inv[r];
    for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
         c += int64_t(gridDim.x) * blockDim.x) {
      y[r * ldy + c] = (count == 2 ? hi[c] + lo[c] : hi[c]) * s;
    }
  }
}

// The GEMM path in f16 on tensor cores: f16 weights and the block types,
// whose decoded values f16 holds to within their quantization step (f32,
// bf16 weights keep the f32 path).
bool takes_half(QuantType type) {
  return type == QuantType::f16 || block_size(type) > 1;
}

// The f16 parts of x that weights of `type` multiply: two for f16 weights,
// whose CPU products keep x's f32 bits, one for the block types.
int parts_for(QuantType type) {
  return type == QuantType::f16 ? 2 : 1;
}

// x [m, k] split for half_product: the parts and the inverse scales in one
// scratch buffer.
struct Split {
  Tensor buf;
  int64_t m = 0, k = 0;
  int count = 0;
  const __half* parts = nullptr;  // [count * m, k]
  const float* inv = nullptr;     // [m]
};

Split split_rows(Backend& backend, const Tensor& x, int count) {
  Split s;
  s.m = x.shape(0);
  s.k = x.shape(1);
  s.count = count;
  // The scales start at an even f16 offset, as a float must.
  const int64_t halves = (count * s.m * s.k + 1) / 2 * 2;
  s.buf = scratch(backend, {halves + 2 * s.m}, DType::f16);
  auto* p = data_ptr<__half>(s.buf);
  auto* inv = reinterpret_cast<float*>(p + halves);
  split_rows_kernel<<<unsigned(s.m), 256, 0, backend.context().stream>>>(
      data_ptr<float>(x), s.m, s.k, count, p, inv);
  check_launch("qmatmul");
  s.parts = p;
  s.inv = inv;
  return s;
}

// out [m, n] = x @ W^T through f16 products of the split x with W as f16
// (itself for f16 rows, decoded panels for the block types).
void half_product(Backend& backend, const Split& x, QuantType type,
                  const Tensor& w, Tensor& out) {
  Context& ctx = backend.context();
  const int64_t m = x.m, k = x.k, n = out.shape(1);
  const auto* wp = reinterpret_cast<const uint8_t*>(byte_ptr(w));
  const int64_t ws = w.strides()[0];
  const MatrixRef a{x.parts, k, 1, 0};
  const bool in_place = type == QuantType::f16 && ws % 2 == 0 &&
                        reinterpret_cast<uintptr_t>(wp) % 2 == 0;
  const int64_t panel_rows =
      std::min(n, std::max<int64_t>(1, kPanelFloats / std::max<int64_t>(k, 1)));
  Tensor panel =
      in_place ? Tensor() : scratch(backend, {panel_rows, k}, DType::f16);
  // One part's products go straight to out and are unscaled in place; two
  // parts' go to a scratch and are added there.
  const Tensor parts = x.count == 2
                           ? scratch(backend, {2 * m, panel_rows}, DType::f32)
                           : Tensor();
  float* y = data_ptr<float>(out);
  for (int64_t p0 = 0; p0 < n; p0 += panel_rows) {
    const int64_t rows = std::min(panel_rows, n - p0);
    MatrixRef b;
    if (in_place) {
      b = {wp + p0 * ws, 1, ws / 2, 0};
    } else {
      auto* hp = data_ptr<__half>(panel);
      dequantize_rows_half(ctx, type, wp + p0 * ws, ws, rows, k, hp);
      b = {hp, 1, k, 0};
    }
    float* pp = x.count == 2 ? data_ptr<float>(parts) : y + p0;
    const int64_t ldp = x.count == 2 ? rows : n;
    gemm(ctx, DType::f16, 1, x.count * m, rows, k, a, b, pp, ldp, 0, 0.0, true);
    const dim3 grid(unsigned(std::min<int64_t>((rows + 255) / 256, 64)),
                    unsigned(std::min<int64_t>(m, 65535)));
    join_parts_kernel<<<grid, 256, 0, ctx.stream>>>(pp, ldp, x.count, x.inv, m,
                                                    rows, y + p0, n);
    check_launch("qmatmul");
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
  // A few rows of x: the mat-vec kernels read the blocks in place.
  std::vector<MatVecArg> direct;
  std::vector<bool> taken(args.size(), false);
  if (op == QuantOp::qmatmul) {
    const float* xp = data_ptr<float>(*x);
    const int64_t m = x->shape(0), k = x->shape(1);
    for (size_t i = 0; i < args.size(); ++i) {
      const QuantArg& arg = args[i];
      taken[i] = matvec_takes(arg.type, *arg.w, m, k, xp);
      if (taken[i]) {
        direct.push_back({arg.type, arg.w, data_ptr<float>(*arg.out)});
      }
    }
    if (!direct.empty()) matvec(ctx, xp, m, k, direct);
  }
  // x as f16 parts, made once for the args that need them: one part for
  // the block types, two for f16 weights.
  Split split[2];
  for (size_t i = 0; i < args.size(); ++i) {
    if (taken[i]) continue;
    const QuantArg& arg = args[i];
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
    if (takes_half(type)) {
      const int count = parts_for(type);
      Split& s = split[count - 1];
      if (!s.buf.defined()) s = split_rows(*this, *x, count);
      half_product(*this, s, type, w, out);
      continue;
    }
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
