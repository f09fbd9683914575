// matmul: 64x64 output tiles per workgroup of 16x16 threads, each thread a
// 4x4 block of registers; A and B pass through workgroup memory 16 values
// of K at a time. Batch dimensions (equal, possibly broadcast as stride 0)
// and every operand's strides are read in place.
#include <fmt/format.h>

#include "nascent/backends/webgpu/context.h"

namespace nascent::webgpu {

namespace {

const char* kMatmulBody = R"(
const TM: u32 = 64u;
const TK: u32 = 16u;
var<workgroup> As: array<V, 1024>;
var<workgroup> Bs: array<V, 1024>;
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) w: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
  let M = P[E];
  let N = P[E + 1u];
  let K = P[E + 2u];
  let sam = pi(E + 3u);
  let sak = pi(E + 4u);
  let sbk = pi(E + 5u);
  let sbn = pi(E + 6u);
  let g = w.x + w.y * n.x;
  let tiles_n = (N + TM - 1u) / TM;
  let per = ((M + TM - 1u) / TM) * tiles_n;
  let bt = g / per;
  if (bt >= numel()) { return; }
  let tm = (g % per) / tiles_n;
  let tn = (g % per) % tiles_n;
  let abase = i32(elem(1u, bt));
  let bbase = i32(elem(2u, bt));
  let obase = elem(0u, bt);
  let ty = t / 16u;
  let tx = t % 16u;
  var acc: array<V, 16>;
  for (var q = 0u; q < 16u; q = q + 1u) { acc[q] = V(0); }
  for (var k0 = 0u; k0 < K; k0 = k0 + TK) {
    for (var q = 0u; q < 4u; q = q + 1u) {
      let e = t + q * WG;
      let row = e / TK;
      let kk = e % TK;
      let gm = tm * TM + row;
      let gk = k0 + kk;
      var va = V(0);
      if (gm < M && gk < K) {
        va = load_A(u32(abase + i32(gm) * sam + i32(gk) * sak));
      }
      As[kk * TM + row] = va;
      let kb = e / TM;
      let col = e % TM;
      let gn = tn * TM + col;
      let gkb = k0 + kb;
      var vb = V(0);
      if (gn < N && gkb < K) {
        vb = load_B(u32(bbase + i32(gkb) * sbk + i32(gn) * sbn));
      }
      Bs[kb * TM + col] = vb;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TK; kk = kk + 1u) {
      var ar: array<V, 4>;
      var br: array<V, 4>;
      for (var i = 0u; i < 4u; i = i + 1u) {
        ar[i] = As[kk * TM + ty * 4u + i];
        br[i] = Bs[kk * TM + tx * 4u + i];
      }
      for (var i = 0u; i < 4u; i = i + 1u) {
        for (var j = 0u; j < 4u; j = j + 1u) {
          acc[i * 4u + j] = acc[i * 4u + j] + ar[i] * br[j];
        }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i = i + 1u) {
    let gm = tm * TM + ty * 4u + i;
    for (var j = 0u; j < 4u; j = j + 1u) {
      let gn = tn * TM + tx * 4u + j;
      if (gm < M && gn < N) { store_O(obase + gm * N + gn, acc[i * 4u + j]); }
    }
  }
}
)";

}  // namespace

void Backend::matmul(const Tensor& a, const Tensor& b, Tensor& out) {
  Context& ctx = *ctx_;
  check_dtype(ctx, "matmul", a);
  check_dtype(ctx, "matmul", b);
  check_dtype(ctx, "matmul", out);
  if (a.dtype() == DType::boolean) {
    throw DTypeError("webgpu backend: matmul of bool is not done yet");
  }
  if (out.numel() == 0) return;
  const int r = a.ndim();
  const int64_t M = a.shape(-2), K = a.shape(-1), N = b.shape(-1);
  if (K == 0) {
    create(CreationOp::fill, Scalar(0), Scalar(0), out);
    return;
  }
  // The batch dims, walked as one index by elem().
  Shape batch(out.shape().begin(), out.shape().end() - 2);
  auto batch_view = [&](const Tensor& t) {
    Strides s(t.strides().begin(), t.strides().begin() + (r - 2));
    return t.as_strided(batch, s, t.offset());
  };
  const Tensor ob = batch_view(out), ab = batch_view(a), bb = batch_view(b);
  const Tensor* views[] = {&ob, &ab, &bb};
  std::vector<uint32_t> words = strided_params(batch, views);
  const size_t e = words.size();
  for (int64_t v :
       {M, N, K, a.strides()[size_t(r - 2)], a.strides()[size_t(r - 1)],
        b.strides()[size_t(r - 2)], b.strides()[size_t(r - 1)]}) {
    words.push_back(uint32_t(int32_t(v)));
  }
  const DType dt = a.dtype();
  std::string src = prelude(kGroup);
  src += fmt::format("alias V = {};\nconst E: u32 = {}u;\n", wgsl_type(dt), e);
  src += declare("O", 1, out.dtype(), true);
  src += declare("A", 2, dt, false);
  src += declare("B", 3, dt, false);
  src += kMatmulBody;
  WGPUComputePipeline pipe =
      ctx.pipeline(std::string("matmul:") + nascent::name(dt), src, "matmul");
  int64_t batches = 1;
  for (int64_t s : batch) batches *= s;
  const uint64_t groups =
      uint64_t(batches) * uint64_t((M + 63) / 64) * uint64_t((N + 63) / 64);
  const WGPUBuffer buffers[] = {buffer_of(out), buffer_of(a), buffer_of(b)};
  ctx.dispatch("matmul", pipe, words, buffers, groups);
}

}  // namespace nascent::webgpu
