// Training an MLP: two Gaussian blobs per class in 2-D, a Sequential of
// Linear and ReLU layers, cross-entropy, AdamW, then a checkpoint written
// and read back into a fresh model.
#include <cstdio>
#include <memory>

#include "nascent/autodiff/autodiff.h"
#include "nascent/nascent.h"
#include "nascent/nn/activation.h"
#include "nascent/nn/layers.h"
#include "nascent/nn/loss.h"
#include "nascent/optim/optimizer.h"
#include "nascent/train/checkpoint.h"

using namespace nascent;

std::shared_ptr<nn::Sequential> make_mlp(Backend& backend, uint64_t seed) {
  Generator gen(seed);
  auto m = std::make_shared<nn::Sequential>();
  m->add(std::make_shared<nn::Linear>(2, 32, backend, gen));
  m->add(std::make_shared<nn::ReLU>());
  m->add(std::make_shared<nn::Linear>(32, 3, backend, gen));
  return m;
}

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "mlp.safetensors";
  cpu::Backend cpu;
  autodiff::Backend ad(cpu);
  // 3 classes of 100 points each, around three centres.
  Tensor labels = floor(arange(300, cpu) / 100).cast(DType::i64);
  Tensor centres = from_vector<float>({-2, 0, 0, 2, 2, 0}, {3, 2}, cpu);
  Tensor points = ad.adopt(index_select(centres, 0, labels) +
                           randn({300, 2}, cpu, 7) * 0.5f);

  auto model = make_mlp(ad, 1);
  std::vector<nn::NamedTensor> params = model->named_parameters();
  std::vector<Tensor> leaves;
  for (nn::NamedTensor& p : params) {
    autodiff::set_requires_grad(*p.tensor);
    leaves.push_back(*p.tensor);
  }
  optim::AdamW opt(params, {.lr = 0.02, .weight_decay = 0.01});
  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    Tensor loss = nn::cross_entropy((*model)(points), ad.adopt(labels));
    std::vector<Tensor> grads = autodiff::grad({loss}, leaves);
    autodiff::NoGradGuard no_grad;  // parameter updates are not recorded
    opt.step(grads);
    last = loss.item<double>();
    if (step == 0) first = last;
    if (step % 50 == 0) std::printf("step %3d  loss %.4f\n", step, last);
  }
  autodiff::NoGradGuard no_grad;
  auto accuracy = [&](nn::Module& m) {
    Tensor hits = eq(argmax(m(points), -1), ad.adopt(labels));
    return mean(hits.cast(DType::f32)).item<double>();
  };
  double acc = accuracy(*model);
  train::save_checkpoint(path, *model, &opt, {{"steps", 200}});
  auto restored = make_mlp(ad, 2);  // other weights until loaded
  train::load_checkpoint(path, *restored, nullptr);
  double acc2 = accuracy(*restored);
  std::printf("loss %.4f -> %.4f, accuracy %.3f, after reload %.3f\n", first,
              last, acc, acc2);
  bool ok = last < first / 4 && acc > 0.95 && acc2 == acc;
  std::printf(ok ? "ok\n" : "FAILED\n");
  return ok ? 0 : 1;
}
