// Tensors and autodiff: ops on the CPU backend, values read back, and the
// gradient of a small function checked against its closed form.
#include <cmath>
#include <cstdio>

#include "nascent/autodiff/autodiff.h"
#include "nascent/nascent.h"

using namespace nascent;

int main() {
  // [tensors]
  cpu::Backend cpu;  // or default_backend()
  Tensor x = randn({64, 784}, cpu, /*seed*/ 1);
  Tensor w = randn({784, 10}, cpu, 2);
  Tensor y = softmax(matmul(x, w) + 1.0f, /*axis*/ -1);
  std::vector<float> host = y.to_vector<float>();  // via Backend::materialize
  // [tensors]
  double row = 0;
  for (int j = 0; j < 10; ++j) row += host[size_t(j)];
  std::printf("y = softmax(x @ w + 1): %s, first row sums to %.6f\n",
              y.to_string().c_str(), row);

  // Views copy nothing: a transposed slice shares x's storage.
  Tensor v = x.slice(0, 0, 4).transpose();
  std::printf("view %s shares storage: %s\n", v.to_string().c_str(),
              v.data() == x.data() ? "yes" : "no");

  // Bad input raises a nascent::Error subclass naming the op and shapes.
  try {
    matmul(zeros({2, 3}, cpu), zeros({4, 5}, cpu));
  } catch (const ShapeError& e) {
    std::printf("ShapeError: %s\n", e.what());
  }

  // [autodiff]
  autodiff::Backend ad(cpu);  // records a tape
  Tensor a = randn({3, 2}, ad, 3, DType::f64);
  Tensor b = randn({4, 3}, ad, 4, DType::f64);
  autodiff::set_requires_grad(a);
  Tensor loss = sum(tanh(matmul(b, a)));
  autodiff::backward(loss);
  Tensor da = autodiff::grad(a);  // accumulated, like .grad
  // [autodiff]

  // d/da sum(tanh(b @ a)) = b^T @ (1 - tanh(b @ a)^2).
  Tensor t = tanh(matmul(b, a));
  Tensor expected = matmul(b.transpose(), 1.0 - t * t);
  double err = max(abs(da - expected)).item<double>();
  std::printf("loss %.6f, |grad - closed form| = %.3g\n", loss.item<double>(),
              err);
  if (!(std::abs(row - 1.0) < 1e-5 && err < 1e-12 && v.data() == x.data())) {
    std::printf("FAILED\n");
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
