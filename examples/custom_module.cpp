// A custom nn::Module: a residual MLP block with its own parameters and
// child modules, composed in a Sequential; its parameters get names, a
// state_dict and gradients like the built-in layers'.
#include <cstdio>
#include <memory>

#include "nascent/autodiff/autodiff.h"
#include "nascent/nascent.h"
#include "nascent/nn/layers.h"

using namespace nascent;

// [module]
// x + W2 relu(W1 rms_norm(x) * gain): parameters registered by name,
// children as modules, so named_parameters() sees "fc1.weight", "gain", ...
class ResidualBlock final : public nn::Module {
 public:
  ResidualBlock(int64_t dim, int64_t hidden, Backend& backend, Generator& gen) {
    gain_ = register_parameter("gain", ones({dim}, backend));
    fc1_ = register_module(
        "fc1", std::make_shared<nn::Linear>(dim, hidden, backend, gen));
    fc2_ = register_module(
        "fc2", std::make_shared<nn::Linear>(hidden, dim, backend, gen));
  }
  std::string describe() const override { return "ResidualBlock"; }
  Tensor forward(const Tensor& x) override {
    return x + (*fc2_)(relu((*fc1_)(rms_norm(x, gain_))));
  }

 private:
  Tensor* gain_;
  std::shared_ptr<nn::Linear> fc1_, fc2_;
};
// [module]

int main() {
  cpu::Backend cpu;
  autodiff::Backend ad(cpu);
  Generator gen(1);
  nn::Sequential net;
  net.add(std::make_shared<ResidualBlock>(8, 32, ad, gen));
  net.add(std::make_shared<ResidualBlock>(8, 32, ad, gen));
  std::printf("%s", net.summary().c_str());
  for (const nn::NamedTensor& p : net.named_parameters()) {
    std::printf("  %-14s %s\n", p.name.c_str(), p.tensor->to_string().c_str());
    autodiff::set_requires_grad(*p.tensor);
  }
  Tensor y = net(randn({4, 8}, ad, 2));
  autodiff::backward(mean(y * y));
  int with_grad = 0;
  for (Tensor* p : net.parameters()) with_grad += autodiff::grad(*p).defined();
  std::printf("%lld parameters, %d of %zu tensors have a gradient\n",
              (long long)net.num_parameters(), with_grad,
              net.parameters().size());
  bool ok = net.num_parameters() == 2 * (8 + 8 * 32 + 32 + 32 * 8 + 8) &&
            with_grad == 10 && net.state_dict().count("1.fc2.bias") == 1;
  std::printf(ok ? "ok\n" : "FAILED\n");
  return ok ? 0 : 1;
}
