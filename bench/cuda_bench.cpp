// The CUDA backend against the GPU's own ceilings, timed with CUDA events
// (median of repeated batches): element-wise ops on 2^28 elements against a
// device-to-device copy of the same bytes, softmax and rms_norm on
// (32768, 4096) bf16, and bf16 GEMM 4096^3 and 8192^3. With --json PATH the
// numbers are also written for bench/cuda_vs_torch.py, which times PyTorch
// on the same problems in the same device session and prints the ratios.
//
//   cuda_bench [--json PATH] [--quick] [--rows-only] [--conv-only]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "nascent/backends/cuda/context.h"
#include "nascent/core/ops.h"

using namespace nascent;

namespace {

void check_cuda(cudaError_t e) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "cuda_bench: %s\n", cudaGetErrorString(e));
    std::exit(1);
  }
}

// Median milliseconds of one call of fn over `reps` batches of `iters`.
double time_ms(cuda::Backend& gpu, int iters, int reps,
               const std::function<void()>& fn) {
  auto stream = static_cast<cudaStream_t>(gpu.native_stream());
  for (int i = 0; i < 3; ++i) fn();
  gpu.synchronize();
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start));
  check_cuda(cudaEventCreate(&stop));
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    check_cuda(cudaEventRecord(start, stream));
    for (int i = 0; i < iters; ++i) fn();
    check_cuda(cudaEventRecord(stop, stream));
    check_cuda(cudaEventSynchronize(stop));
    float t = 0;
    check_cuda(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(double(t) / iters);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

struct Result {
  std::string name;
  double ms;
  double bytes;  // Through memory, read + write (0 for GEMM).
  double flops;  // 0 for memory-bound ops.
};

void print(const Result& r, double copy_gbs) {
  if (r.flops > 0) {
    std::printf("%-28s %9.4f ms %9.1f TFLOP/s\n", r.name.c_str(), r.ms,
                r.flops / r.ms / 1e9);
  } else {
    const double gbs = r.bytes / r.ms / 1e6;
    std::printf("%-28s %9.4f ms %9.1f GB/s  %5.2fx copy\n", r.name.c_str(),
                r.ms, gbs, copy_gbs > 0 ? gbs / copy_gbs : 0.0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string json;
  bool quick = false, rows_only = false, conv_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) json = argv[++i];
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--rows-only") == 0) rows_only = true;
    if (std::strcmp(argv[i], "--conv-only") == 0) conv_only = true;
  }
  if (cuda::Backend::device_count() == 0) {
    std::printf("cuda_bench: no CUDA device; nothing to measure\n");
    return 0;
  }
  cuda::Backend gpu(0);
  auto stream = static_cast<cudaStream_t>(gpu.native_stream());
  const int reps = quick ? 3 : 11;
  std::vector<Result> results;
  double copy_gbs = 0;

  // The Fashion-MNIST CNN's two convolutions (f32, 3x3, padding 1) and
  // their gradients: device time per call (events) and host time per call
  // (enqueueing 20 calls, then one wait), for comparing conv2d's paths
  // (NASCENT_CUDA_CONV=im2col or cudnn).
  if (conv_only) {
    Conv2dParams cp;
    cp.padding[0] = cp.padding[1] = 1;
    for (int64_t batch : {int64_t(64), int64_t(256)}) {
      for (int layer = 0; layer < 2; ++layer) {
        const int64_t c = layer == 0 ? 1 : 32, o = layer == 0 ? 32 : 64;
        const int64_t hw = layer == 0 ? 28 : 14;
        Tensor x = randn({batch, c, hw, hw}, gpu, 7);
        Tensor w = randn({o, c, 3, 3}, gpu, 8);
        Tensor b = randn({o}, gpu, 9);
        Tensor g = randn({batch, o, hw, hw}, gpu, 10);
        Tensor y;
        const std::function<void()> ops[3] = {
            [&] { y = conv2d(x, w, &b, cp); },
            [&] { y = conv2d_backward_input(g, w, x.shape(), cp); },
            [&] { y = conv2d_backward_weight(x, g, w.shape(), cp); }};
        const char* names[3] = {"forward", "grad input", "grad weight"};
        for (int k = 0; k < 3; ++k) {
          const double dev = time_ms(gpu, 20, reps, ops[k]);
          gpu.synchronize();
          const auto t0 = std::chrono::steady_clock::now();
          for (int i = 0; i < 20; ++i) ops[k]();
          const auto t1 = std::chrono::steady_clock::now();
          gpu.synchronize();
          const double host_us =
              std::chrono::duration<double, std::micro>(t1 - t0).count() / 20;
          std::printf(
              "conv%d batch %3lld %-12s %8.4f ms device %8.1f us host\n",
              layer + 1, static_cast<long long>(batch), names[k], dev, host_us);
        }
      }
    }
    return 0;
  }

  // Element-wise on 2^28 elements (1 GiB of f32: far past the 60 MB L2).
  const int64_t n = int64_t(1) << 28;
  for (DType dt : {DType::f32, DType::bf16}) {
    if (rows_only) break;
    const double item = double(size_of(dt));
    const std::string tag = std::string(" ") + name(dt);
    Tensor a = randn({n}, gpu, 1, dt), b = randn({n}, gpu, 2, dt);
    Tensor dst = Tensor::empty({n}, dt, gpu);
    const size_t nbytes = size_t(n) * size_of(dt);
    Result copy{"copy (cudaMemcpy d2d)" + tag,
                time_ms(gpu, 20, reps,
                        [&] {
                          check_cuda(cudaMemcpyAsync(
                              cuda::byte_ptr(dst), cuda::byte_ptr(a), nbytes,
                              cudaMemcpyDeviceToDevice, stream));
                        }),
                2 * double(nbytes), 0};
    if (dt == DType::f32) copy_gbs = copy.bytes / copy.ms / 1e6;
    results.push_back(copy);
    Tensor c;
    results.push_back({"add" + tag, time_ms(gpu, 20, reps, [&] { c = a + b; }),
                       3 * item * double(n), 0});
    results.push_back({"mul" + tag, time_ms(gpu, 20, reps, [&] { c = a * b; }),
                       3 * item * double(n), 0});
    results.push_back({"gelu" + tag,
                       time_ms(gpu, 20, reps, [&] { c = gelu(a); }),
                       2 * item * double(n), 0});
  }

  // Rows of (32768, 4096) bf16.
  {
    Tensor x = randn({32768, 4096}, gpu, 3, DType::bf16);
    Tensor w = randn({4096}, gpu, 4, DType::bf16);
    const double bytes = 2.0 * 2 * 32768 * 4096;
    Tensor y;
    results.push_back({"softmax (32768, 4096) bf16",
                       time_ms(gpu, 20, reps, [&] { y = softmax(x, -1); }),
                       bytes, 0});
    results.push_back({"rms_norm (32768, 4096) bf16",
                       time_ms(gpu, 20, reps, [&] { y = rms_norm(x, &w); }),
                       bytes, 0});
  }

  // bf16 GEMM, f32 accumulation.
  for (int64_t s : {int64_t(4096), int64_t(8192)}) {
    if (rows_only) break;
    Tensor a = randn({s, s}, gpu, 5, DType::bf16);
    Tensor b = randn({s, s}, gpu, 6, DType::bf16);
    Tensor c;
    const int iters = s == 4096 ? 50 : 10;
    results.push_back({"matmul bf16 " + std::to_string(s) + "^3",
                       time_ms(gpu, iters, reps, [&] { c = matmul(a, b); }), 0,
                       2.0 * double(s) * double(s) * double(s)});
  }

  std::printf("\nnascent CUDA backend on %s (median of %d batches)\n",
              gpu.name().c_str(), reps);
  for (const Result& r : results) print(r, copy_gbs);
  if (!json.empty()) {
    FILE* f = std::fopen(json.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "cuda_bench: cannot write %s\n", json.c_str());
      return 1;
    }
    std::fprintf(f, "[\n");
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      std::fprintf(f,
                   "  {\"name\": \"%s\", \"ms\": %.6f, \"bytes\": %.0f, "
                   "\"flops\": %.0f}%s\n",
                   r.name.c_str(), r.ms, r.bytes, r.flops,
                   i + 1 < results.size() ? "," : "");
    }
    std::fprintf(f, "]\n");
    std::fclose(f);
  }
  return 0;
}
