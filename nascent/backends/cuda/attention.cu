// Scaled dot-product attention on the GPU for f32, causal or not, without a
// mask tensor, head dims up to 128: one kernel that never writes the
// scores out (FlashAttention's online softmax), in place of the composed
// default's matmul, softmax and matmul over blocks of queries.
//
// A block of kThreads threads takes kRows query rows of one head (a warp
// each) and walks the keys in tiles of 32, which its threads load into
// shared memory for all its rows. A warp's lane j scores key j of the tile,
// the warp takes the tile's maximum and rescales its running sums, then
// each lane accumulates the output values lane, lane + 32, ... from the
// tile's values with the probabilities passed round by shuffles.
//
// Decoding has one query row per head, far too few blocks for the GPU: the
// keys are then split into ranges (split-K, as FlashDecoding), each block
// writes its unnormalised output, maximum and sum, and a second kernel
// combines the ranges.
//
// Prompts (at least kGemmRows query rows) take cuBLAS's f32 GEMMs instead,
// which keep far more of the GPU's FMA units busy than the kernel above
// does from shared memory: the queries, copied head by head, times the keys
// of their head in one batched product over the key heads, a causal
// softmax kernel over the scores, and the probabilities times the values.
// The scores of a chunk of queries stay under kScoreFloats.
#include <algorithm>
#include <cmath>

#include "nascent/backends/cuda/device.cuh"
#include "nascent/backends/cuda/gemm.h"
#include "nascent/core/ops.h"

namespace nascent::cuda {

namespace {

constexpr int kThreads = 128;
constexpr int kTile = 32;  // Keys a tile.
constexpr int64_t kGemmRows = 64;
constexpr int64_t kScoreFloats = int64_t(1) << 24;

struct View {
  const float* p = nullptr;
  int64_t s[4] = {};  // Element strides of [B, H, L, D].
};

struct AttnArgs {
  View q, k, v;
  float* out = nullptr;
  int64_t os[4] = {};
  int64_t batch = 0, hq = 0, group = 1, lq = 0, lk = 0, d = 0, dv = 0;
  float scale = 1.0f;
  bool causal = false;
  bool vec = false;  // k and v rows contiguous, aligned, of kD values.
  int splits = 1;
  int64_t split_keys = 0;
  // With splits > 1: [splits, batch * hq * lq] maxima and sums and
  // [splits, batch * hq * lq, dv] unnormalised outputs.
  float* part_m = nullptr;
  float* part_l = nullptr;
  float* part_o = nullptr;
};

NASCENT_D float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) {
    v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
  }
  return v;
}
NASCENT_D float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
  return v;
}

template <int kRows, int kD>
__global__ void __launch_bounds__(kThreads) attention_kernel(AttnArgs a) {
  __shared__ float qs[kRows][kD];
  __shared__ float ks[kTile][kD + 1];  // Padded: lane j reads row j.
  __shared__ __align__(16) float vs[kTile][kD];
  const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
  const int64_t b = blockIdx.z / a.splits;
  const int split = int(blockIdx.z % a.splits);
  const int64_t h = blockIdx.y, hk = h / a.group;
  const int64_t r0 = int64_t(blockIdx.x) * kRows;
  const int64_t row = r0 + warp;
  const bool active = warp < kRows && row < a.lq;

  const float* q = a.q.p + b * a.q.s[0] + h * a.q.s[1];
  for (int i = int(threadIdx.x); i < kRows * kD; i += kThreads) {
    const int rr = i / kD, c = i % kD;
    const int64_t qr = r0 + rr;
    qs[rr][c] = qr < a.lq && c < a.d ? q[qr * a.q.s[2] + c * a.q.s[3]] : 0.0f;
  }
  // Keys this block may see: up to the last row's causal limit.
  int64_t last = a.lk;
  if (a.causal) last = a.lk - a.lq + std::min<int64_t>(r0 + kRows, a.lq);
  const int64_t begin = int64_t(split) * a.split_keys;
  const int64_t end = std::min(last, begin + a.split_keys);
  const int64_t limit = a.causal ? a.lk - a.lq + row + 1 : a.lk;

  const float* k = a.k.p + b * a.k.s[0] + hk * a.k.s[1];
  const float* v = a.v.p + b * a.v.s[0] + hk * a.v.s[1];
  constexpr int kCols = kD / 32;
  float o[kCols];
#pragma unroll
  for (int c = 0; c < kCols; ++c) o[c] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  for (int64_t j0 = begin; j0 < end; j0 += kTile) {
    __syncthreads();  // The previous tile is consumed (and qs written).
    if (a.vec) {
      // Rows of kD contiguous, aligned floats: 16 bytes a load.
      for (int i = int(threadIdx.x); i < kTile * kD / 4; i += kThreads) {
        const int jj = i / (kD / 4), c = 4 * (i % (kD / 4));
        const int64_t key = j0 + jj;
        float4 kv = make_float4(0.0f, 0.0f, 0.0f, 0.0f), vv = kv;
        if (key < end) {
          kv = __ldg(reinterpret_cast<const float4*>(k + key * a.k.s[2] + c));
          vv = __ldg(reinterpret_cast<const float4*>(v + key * a.v.s[2] + c));
        }
        ks[jj][c] = kv.x;
        ks[jj][c + 1] = kv.y;
        ks[jj][c + 2] = kv.z;
        ks[jj][c + 3] = kv.w;
        *reinterpret_cast<float4*>(&vs[jj][c]) = vv;
      }
    } else {
      for (int i = int(threadIdx.x); i < kTile * kD; i += kThreads) {
        const int jj = i / kD, c = i % kD;
        const int64_t key = j0 + jj;
        const bool in = key < end;
        ks[jj][c] = in && c < a.d ? k[key * a.k.s[2] + c * a.k.s[3]] : 0.0f;
        vs[jj][c] = in && c < a.dv ? v[key * a.v.s[2] + c * a.v.s[3]] : 0.0f;
      }
    }
    __syncthreads();
    if (!active) continue;
    const int64_t key = j0 + lane;
    float s = -INFINITY;
    if (key < end && key < limit) {
      float dot = 0.0f;
#pragma unroll 8
      for (int c = 0; c < kD; ++c) dot = fmaf(qs[warp][c], ks[lane][c], dot);
      s = dot * a.scale;
    }
    const float m_new = fmaxf(m, warp_max(s));
    if (m_new == -INFINITY) continue;  // No key of this row seen yet.
    const float alpha = expf(m - m_new);
    const float p = expf(s - m_new);
    l = fmaf(l, alpha, p);  // This lane's share of the sum.
#pragma unroll
    for (int c = 0; c < kCols; ++c) o[c] *= alpha;
#pragma unroll 8
    for (int jj = 0; jj < kTile; ++jj) {
      const float pj = __shfl_sync(0xFFFFFFFFu, p, jj);
#pragma unroll
      for (int c = 0; c < kCols; ++c)
        o[c] = fmaf(pj, vs[jj][lane + 32 * c], o[c]);
    }
    m = m_new;
  }
  if (!active) return;
  l = warp_sum(l);
  if (a.splits == 1) {
    float* out = a.out + b * a.os[0] + h * a.os[1] + row * a.os[2];
    const float inv = 1.0f / l;
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int col = lane + 32 * c;
      if (col < a.dv) out[col * a.os[3]] = o[c] * inv;
    }
    return;
  }
  const int64_t r = ((split * a.batch + b) * a.hq + h) * a.lq + row;
  if (lane == 0) {
    a.part_m[r] = m;
    a.part_l[r] = l;
  }
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    const int col = lane + 32 * c;
    if (col < a.dv) a.part_o[r * a.dv + col] = o[c];
  }
}

// out = the key ranges' outputs, each weighted by e^(its max - the max),
// over the weighted sums. A range that saw no key has sum 0.
__global__ void combine_kernel(AttnArgs a) {
  const int64_t rows = a.batch * a.hq * a.lq;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
       e < rows * a.dv; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / a.dv, col = e % a.dv;
    float top = -INFINITY;
    for (int s = 0; s < a.splits; ++s) {
      if (a.part_l[s * rows + r] > 0.0f)
        top = fmaxf(top, a.part_m[s * rows + r]);
    }
    float sum = 0.0f, acc = 0.0f;
    for (int s = 0; s < a.splits; ++s) {
      const int64_t i = s * rows + r;
      if (!(a.part_l[i] > 0.0f)) continue;
      const float w = expf(a.part_m[i] - top);
      sum = fmaf(a.part_l[i], w, sum);
      acc = fmaf(a.part_o[i * a.dv + col], w, acc);
    }
    const int64_t i = r % a.lq, bh = r / a.lq;
    const int64_t b = bh / a.hq, h = bh % a.hq;
    a.out[b * a.os[0] + h * a.os[1] + i * a.os[2] + col * a.os[3]] = acc / sum;
  }
}

// Scores [rows, n] of the queries i0 + r % chunk (r a row) over the keys
// [0, n) become probabilities in place: key j counts when j < n, and under
// causal also j <= offset + i (offset = lk - lq >= 0, so every row has a
// key); the others become 0. A warp a row.
__global__ void softmax_rows_kernel(float* s, int64_t rows, int64_t n,
                                    int64_t chunk, int64_t i0, int64_t offset,
                                    bool causal, float scale) {
  const int64_t r = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = int(threadIdx.x % 32);
  if (r >= rows) return;
  float* row = s + r * n;
  int64_t valid = n;
  if (causal) {
    const int64_t limit = offset + i0 + r % chunk + 1;
    valid = limit < n ? limit : n;
  }
  float m = -INFINITY;
  for (int64_t j = lane; j < valid; j += 32) m = fmaxf(m, row[j] * scale);
  m = warp_max(m);
  float l = 0.0f;
  for (int64_t j = lane; j < valid; j += 32) {
    const float e = expf(row[j] * scale - m);
    row[j] = e;
    l += e;
  }
  const float inv = 1.0f / warp_sum(l);
  for (int64_t j = lane; j < n; j += 32)
    row[j] = j < valid ? row[j] * inv : 0.0f;
}

View view_of(const Tensor& t) {
  View v;
  v.p = data_ptr<float>(t);
  for (int i = 0; i < 4; ++i) v.s[i] = t.strides()[size_t(i)];
  return v;
}

template <int kRows, int kD>
void launch(Context& ctx, const AttnArgs& a) {
  const dim3 grid(unsigned((a.lq + kRows - 1) / kRows), unsigned(a.hq),
                  unsigned(a.batch * a.splits));
  attention_kernel<kRows, kD><<<grid, kThreads, 0, ctx.stream>>>(a);
  check_launch("attention");
}

// The prompt path: per batch and chunk of queries, S = Q K^T over the
// chunk's keys (under causal, those its last row sees), softmax, O = P V.
// Q is copied head-major ([hq, chunk, d] contiguous), so the query rows of
// one key head follow each other with one stride and a single batched GEMM
// covers every head; O comes out the same way into a scratch and is copied
// into out's rows.
void attention_by_gemms(Backend& backend, const Tensor& q, const Tensor& k,
                        const Tensor& v, const AttentionParams& p,
                        Tensor& out) {
  Context& ctx = backend.context();
  const int64_t batch = q.shape(0), hq = q.shape(1), lq = q.shape(2);
  const int64_t hk = k.shape(1), lk = k.shape(2);
  const int64_t d = q.shape(3), dv = v.shape(3), group = hq / hk;
  const int64_t offset = lk - lq;
  const int64_t chunk =
      std::min(lq, std::max<int64_t>(kGemmRows, kScoreFloats / (hq * lk)));
  const Tensor scores = scratch(backend, {hq * chunk * lk}, DType::f32);
  float* sp = data_ptr<float>(scores);
  for (int64_t b = 0; b < batch; ++b) {
    const Tensor kb = k.narrow(0, b, 1), vb = v.narrow(0, b, 1);
    for (int64_t i0 = 0; i0 < lq; i0 += chunk) {
      const int64_t mc = std::min(chunk, lq - i0);
      const int64_t n = p.causal ? std::min(lk, offset + i0 + mc) : lk;
      const Tensor qc = q.narrow(0, b, 1).narrow(2, i0, mc).contiguous();
      const MatrixRef qa{data_ptr<float>(qc), d, 1, group * mc * d};
      const MatrixRef kt{data_ptr<float>(kb), kb.strides()[3], kb.strides()[2],
                         kb.strides()[1]};
      gemm(ctx, DType::f32, hk, group * mc, n, d, qa, kt, sp, n,
           group * mc * n);
      const int64_t rows = hq * mc;
      softmax_rows_kernel<<<unsigned((rows + 7) / 8), 256, 0, ctx.stream>>>(
          sp, rows, n, mc, i0, offset, p.causal, float(p.scale));
      check_launch("attention");
      const Tensor oc = scratch(backend, {1, hq, mc, dv}, DType::f32);
      const MatrixRef pa{sp, n, 1, group * mc * n};
      const MatrixRef vm{data_ptr<float>(vb), vb.strides()[2], vb.strides()[3],
                         vb.strides()[1]};
      gemm(ctx, DType::f32, hk, group * mc, dv, n, pa, vm, data_ptr<float>(oc),
           dv, group * mc * dv);
      Tensor dst = out.narrow(0, b, 1).narrow(2, i0, mc);
      backend.copy(oc, dst);
    }
  }
}

}  // namespace

void Backend::attention(const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor* mask, const AttentionParams& p,
                        Tensor& out) {
  const int64_t d = q.shape(3), dv = v.shape(3);
  const int64_t batch = q.shape(0), hq = q.shape(1), lq = q.shape(2);
  const int64_t lk = k.shape(2);
  // The grid's y and z are 16-bit: more heads or batches take the default.
  if (q.dtype() != DType::f32 || mask != nullptr || d > 128 || dv > 128 ||
      hq > 65535 || batch > 1023 || lq > (int64_t(1) << 30)) {
    return nascent::Backend::attention(q, k, v, mask, p, out);
  }
  if (out.numel() == 0) return;
  DeviceGuard guard(ctx_->device);
  // The GEMMs need a BLAS layout of the keys' and values' rows, and every
  // causal row some key.
  auto blas_rows = [](const Tensor& t) {
    return t.strides()[3] == 1 &&
           (t.shape(2) == 1 || t.strides()[2] >= t.shape(3));
  };
  if (lq >= kGemmRows && lk >= 1 && (!p.causal || lk >= lq) && blas_rows(k) &&
      blas_rows(v)) {
    return attention_by_gemms(*this, q, k, v, p, out);
  }
  Context& ctx = *ctx_;
  AttnArgs a;
  a.q = view_of(q);
  a.k = view_of(k);
  a.v = view_of(v);
  a.out = data_ptr<float>(out);
  for (int i = 0; i < 4; ++i) a.os[i] = out.strides()[size_t(i)];
  a.batch = batch;
  a.hq = hq;
  a.group = hq / k.shape(1);
  a.lq = lq;
  a.lk = lk;
  a.d = d;
  a.dv = dv;
  a.scale = float(p.scale);
  a.causal = p.causal;
  const int rows = lq >= 4 ? 4 : 1;
  // Enough blocks to fill the GPU twice over, in ranges of at least 64 keys.
  const int64_t blocks = (lq + rows - 1) / rows * hq * batch;
  const int64_t want = 2 * int64_t(std::max(ctx.sm_count, 1));
  int64_t splits = 1;
  if (blocks < want && lk >= 128) {
    splits = std::min((lk + 63) / 64, (want + blocks - 1) / blocks);
    splits = std::min<int64_t>(splits, 64);
  }
  a.split_keys = (lk + splits - 1) / splits;
  a.split_keys = (a.split_keys + kTile - 1) / kTile * kTile;
  a.splits = int((lk + a.split_keys - 1) / a.split_keys);
  Tensor part;
  if (a.splits > 1) {
    const int64_t r = a.splits * batch * hq * lq;
    part = scratch(*this, {r * (dv + 2)}, DType::f32);
    a.part_m = data_ptr<float>(part);
    a.part_l = a.part_m + r;
    a.part_o = a.part_l + r;
  }
  const bool wide = std::max(d, dv) > 64;
  const int64_t kd = wide ? 128 : 64;
  auto vector_rows = [&](const Tensor& t) {
    return t.strides()[3] == 1 && t.strides()[2] % 4 == 0 &&
           t.strides()[1] % 4 == 0 && t.strides()[0] % 4 == 0 &&
           aligned16(data_ptr<float>(t));
  };
  a.vec = d == kd && dv == kd && vector_rows(k) && vector_rows(v);
  if (rows == 4) {
    wide ? launch<4, 128>(ctx, a) : launch<4, 64>(ctx, a);
  } else {
    wide ? launch<1, 128>(ctx, a) : launch<1, 64>(ctx, a);
  }
  if (a.splits > 1) {
    const int64_t items = batch * hq * lq * dv;
    combine_kernel<<<grid_for(items, 256), 256, 0, ctx.stream>>>(a);
    check_launch("attention");
  }
}

}  // namespace nascent::cuda
