// matmul through cuBLASLt. The product is described row-major; cuBLASLt is
// column-major, so it computes C^T = B^T A^T, which reads the same memory
// with no copy. Operands that are not a BLAS layout (a broadcast matrix, a
// sliced one with stride 2) are copied to contiguous first. Batch axes that
// collapse to one stride run as one strided-batched call; others loop.
// The algorithm cuBLASLt's heuristic picks is cached per problem.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "nascent/backends/cuda/gemm.h"
#include "nascent/backends/cuda/libraries.h"

namespace nascent::cuda {

namespace {

cudaDataType_t data_type(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return CUDA_R_64F;
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

// Largest power of two (up to 256) dividing the address: cuBLASLt assumes
// 256-byte alignment unless told otherwise.
uint32_t alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && v % a != 0) a /= 2;
  return a;
}

// RAII for cuBLASLt descriptors.
struct Layout {
  cublasLtMatrixLayout_t h = nullptr;
  Layout(cudaDataType_t t, int64_t rows, int64_t cols, int64_t ld,
         int64_t batch, int64_t bs) {
    check(cublaslt().cublasLtMatrixLayoutCreate(&h, t, uint64_t(rows),
                                                uint64_t(cols), ld),
          "cublasLtMatrixLayoutCreate");
    if (batch > 1) {
      int32_t count = int32_t(batch);
      check(cublaslt().cublasLtMatrixLayoutSetAttribute(
                h, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
            "cublasLtMatrixLayoutSetAttribute");
      check(
          cublaslt().cublasLtMatrixLayoutSetAttribute(
              h, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &bs, sizeof(bs)),
          "cublasLtMatrixLayoutSetAttribute");
    }
  }
  ~Layout() { cublaslt().cublasLtMatrixLayoutDestroy(h); }
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;
};

}  // namespace

bool blas_layout(int64_t rows, int64_t cols, int64_t& rs, int64_t& cs) {
  if (cols == 1 && rs > 0) cs = 1;
  if (rows == 1 && cs > 0 && cs != 1) rs = 1;
  if (rows == 1 && cs == 1) rs = std::max<int64_t>(rs, cols);
  if (cs == 1 && rs >= std::max<int64_t>(1, cols)) return true;
  if (rs == 1 && cs >= std::max<int64_t>(1, rows)) return true;
  return false;
}

void gemm(Context& ctx, DType dtype, int64_t batch, int64_t m, int64_t n,
          int64_t k, const MatrixRef& a_in, const MatrixRef& b_in, void* c,
          int64_t ldc, int64_t c_bs, double beta, bool f32_out) {
  if (batch == 0 || m == 0 || n == 0) return;
  MatrixRef a = a_in, b = b_in;
  if (!blas_layout(m, k, a.rs, a.cs) || !blas_layout(k, n, b.rs, b.cs)) {
    throw BackendError(fmt::format(
        "cuda: gemm: operand strides ({}, {}) and ({}, {}) are not a BLAS "
        "layout for [{}x{}] @ [{}x{}]",
        a.rs, a.cs, b.rs, b.cs, m, k, k, n));
  }
  const cudaDataType_t t = data_type(dtype);
  const bool f64 = dtype == DType::f64;
  cublasComputeType_t compute = f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  if (dtype == DType::f32 && ctx.allow_tf32) {
    compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  }
  const cudaDataType_t scale = f64 ? CUDA_R_64F : CUDA_R_32F;
  // cuBLASLt's "A" is B^T (n x k), its "B" is A^T (k x m), D is C^T.
  const bool b_row = b.cs == 1;  // B row-major: B^T is column-major.
  const bool a_row = a.cs == 1;
  const cublasOperation_t op_a = b_row ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t op_b = a_row ? CUBLAS_OP_N : CUBLAS_OP_T;
  Layout la(t, b_row ? n : k, b_row ? k : n, b_row ? b.rs : b.cs, batch, b.bs);
  Layout lb(t, a_row ? k : m, a_row ? m : k, a_row ? a.rs : a.cs, batch, a.bs);
  Layout lc(f32_out ? CUDA_R_32F : t, n, m, ldc, batch, c_bs);

  cublasLtMatmulDesc_t desc = nullptr;
  check(cublaslt().cublasLtMatmulDescCreate(&desc, compute, scale),
        "cublasLtMatmulDescCreate");
  struct DescGuard {
    cublasLtMatmulDesc_t d;
    ~DescGuard() { cublaslt().cublasLtMatmulDescDestroy(d); }
  } desc_guard{desc};
  check(cublaslt().cublasLtMatmulDescSetAttribute(
            desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)),
        "cublasLtMatmulDescSetAttribute");
  check(cublaslt().cublasLtMatmulDescSetAttribute(
            desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)),
        "cublasLtMatmulDescSetAttribute");

  const uint32_t align_a = alignment(b.ptr), align_b = alignment(a.ptr),
                 align_c = alignment(c);
  const std::vector<int64_t> key = {int64_t(dtype),
                                    int64_t(compute),
                                    batch,
                                    m,
                                    n,
                                    k,
                                    a.rs,
                                    a.cs,
                                    a.bs,
                                    b.rs,
                                    b.cs,
                                    b.bs,
                                    ldc,
                                    c_bs,
                                    align_a,
                                    align_b,
                                    align_c,
                                    beta != 0.0,
                                    f32_out};
  cublasLtMatmulAlgo_t algo;
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(ctx.mutex);
    auto it = ctx.gemm_algos.find(key);
    if (it != ctx.gemm_algos.end()) {
      algo = it->second;
      cached = true;
    }
  }
  if (!cached) {
    cublasLtMatmulPreference_t pref = nullptr;
    check(cublaslt().cublasLtMatmulPreferenceCreate(&pref),
          "cublasLtMatmulPreferenceCreate");
    struct PrefGuard {
      cublasLtMatmulPreference_t p;
      ~PrefGuard() { cublaslt().cublasLtMatmulPreferenceDestroy(p); }
    } pref_guard{pref};
    const uint64_t ws = ctx.workspace_bytes;
    check(cublaslt().cublasLtMatmulPreferenceSetAttribute(
              pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
          "cublasLtMatmulPreferenceSetAttribute");
    for (auto [attr, value] :
         {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a},
          std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b},
          std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_c},
          std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_c}}) {
      check(cublaslt().cublasLtMatmulPreferenceSetAttribute(pref, attr, &value,
                                                            sizeof(value)),
            "cublasLtMatmulPreferenceSetAttribute");
    }
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    check(cublaslt().cublasLtMatmulAlgoGetHeuristic(
              ctx.lt, desc, la.h, lb.h, lc.h, lc.h, pref, 1, &result, &found),
          "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) {
      throw BackendError(fmt::format(
          "cuda: matmul: cuBLASLt has no algorithm for {} [{}x{}] @ [{}x{}] "
          "(batch {})",
          name(dtype), m, k, k, n, batch));
    }
    algo = result.algo;
    std::lock_guard<std::mutex> lock(ctx.mutex);
    ctx.gemm_algos.emplace(key, algo);
  }
  const float one_f = 1.0f, beta_f = float(beta);
  const double one_d = 1.0;
  const void* alpha = f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* beta_p = f64 ? static_cast<const void*>(&beta) : &beta_f;
  check(cublaslt().cublasLtMatmul(
            ctx.lt, desc, alpha, b.ptr, la.h, a.ptr, lb.h, beta_p, c, lc.h, c,
            lc.h, &algo, ctx.workspace, ctx.workspace_bytes, ctx.stream),
        "cublasLtMatmul");
}

void Backend::matmul(const Tensor& a_in, const Tensor& b_in, Tensor& out) {
  DeviceGuard guard(ctx_->device);
  Context& ctx = *ctx_;
  if (out.numel() == 0) return;
  const int nd = out.ndim();
  const int64_t m = out.shape()[size_t(nd - 2)],
                n = out.shape()[size_t(nd - 1)];
  const int64_t k = a_in.shape()[size_t(nd - 1)];
  if (k == 0) {
    check(cudaMemsetAsync(byte_ptr(out), 0,
                          size_t(out.numel()) * out.itemsize(), ctx.stream),
          "cudaMemsetAsync (matmul)");
    return;
  }
  // Operands that are not a BLAS layout become contiguous copies.
  auto usable = [&](const Tensor& t, int64_t rows, int64_t cols) {
    int64_t rs = t.strides()[size_t(nd - 2)], cs = t.strides()[size_t(nd - 1)];
    for (int d = 0; d < nd - 2; ++d) {
      if (t.strides()[size_t(d)] < 0) return false;
    }
    return blas_layout(rows, cols, rs, cs);
  };
  const Tensor a = usable(a_in, m, k) ? a_in : contiguous(*this, a_in);
  const Tensor b = usable(b_in, k, n) ? b_in : contiguous(*this, b_in);
  MatrixRef ra{byte_ptr(a), a.strides()[size_t(nd - 2)],
               a.strides()[size_t(nd - 1)], 0};
  MatrixRef rb{byte_ptr(b), b.strides()[size_t(nd - 2)],
               b.strides()[size_t(nd - 1)], 0};
  blas_layout(m, k, ra.rs, ra.cs);
  blas_layout(k, n, rb.rs, rb.cs);
  // Batch axes: drop size 1, merge those that step evenly for all three.
  struct Axis {
    int64_t size, sa, sb, so;
  };
  std::vector<Axis> axes;
  for (int d = 0; d < nd - 2; ++d) {
    const Axis ax{out.shape()[size_t(d)], a.strides()[size_t(d)],
                  b.strides()[size_t(d)], out.strides()[size_t(d)]};
    if (ax.size == 1) continue;
    if (!axes.empty()) {
      Axis& last = axes.back();
      if (last.sa == ax.sa * ax.size && last.sb == ax.sb * ax.size &&
          last.so == ax.so * ax.size) {
        last.size *= ax.size;
        last.sa = ax.sa;
        last.sb = ax.sb;
        last.so = ax.so;
        continue;
      }
    }
    axes.push_back(ax);
  }
  const Axis inner = axes.empty() ? Axis{1, 0, 0, 0} : axes.back();
  if (!axes.empty()) axes.pop_back();
  int64_t outer = 1;
  for (const Axis& ax : axes) outer *= ax.size;
  const size_t item = out.itemsize();
  for (int64_t o = 0; o < outer; ++o) {
    int64_t oa = 0, ob = 0, oo = 0, rem = o;
    for (size_t i = axes.size(); i-- > 0;) {
      const int64_t idx = rem % axes[i].size;
      rem /= axes[i].size;
      oa += idx * axes[i].sa;
      ob += idx * axes[i].sb;
      oo += idx * axes[i].so;
    }
    MatrixRef pa = ra, pb = rb;
    pa.ptr = static_cast<const std::byte*>(ra.ptr) + oa * int64_t(item);
    pb.ptr = static_cast<const std::byte*>(rb.ptr) + ob * int64_t(item);
    pa.bs = inner.sa;
    pb.bs = inner.sb;
    gemm(ctx, out.dtype(), inner.size, m, n, k, pa, pb,
         byte_ptr(out) + oo * int64_t(item), n, inner.so);
  }
}

}  // namespace nascent::cuda
