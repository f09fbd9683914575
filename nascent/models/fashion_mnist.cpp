#include "nascent/models/fashion_mnist.h"

#include <fmt/format.h>

#include "nascent/nn/activation.h"

namespace nascent::models {

std::shared_ptr<nn::Sequential> fashion_mnist_model(const std::string& kind,
                                                    Backend& backend,
                                                    uint64_t seed) {
  Generator gen(seed);
  auto m = std::make_shared<nn::Sequential>();
  if (kind == "cnn") {
    m->add(std::make_shared<nn::Conv2d>(
        1, 32, nn::Conv2dOptions{.kernel = 3, .padding = 1}, backend, gen));
    m->add(std::make_shared<nn::ReLU>());
    m->add(std::make_shared<nn::MaxPool2d>(2));
    m->add(std::make_shared<nn::Conv2d>(
        32, 64, nn::Conv2dOptions{.kernel = 3, .padding = 1}, backend, gen));
    m->add(std::make_shared<nn::ReLU>());
    m->add(std::make_shared<nn::MaxPool2d>(2));
    m->add(std::make_shared<nn::Flatten>());
    m->add(std::make_shared<nn::Linear>(64 * 7 * 7, 128, backend, gen));
    m->add(std::make_shared<nn::ReLU>());
    m->add(std::make_shared<nn::Linear>(128, 10, backend, gen));
  } else if (kind == "mlp") {
    m->add(std::make_shared<nn::Flatten>());
    m->add(std::make_shared<nn::Linear>(784, 512, backend, gen));
    m->add(std::make_shared<nn::ReLU>());
    m->add(std::make_shared<nn::Linear>(512, 256, backend, gen));
    m->add(std::make_shared<nn::ReLU>());
    m->add(std::make_shared<nn::Linear>(256, 10, backend, gen));
  } else {
    throw ValueError(fmt::format(
        "fashion_mnist_model: unknown model \"{}\" (cnn or mlp)", kind));
  }
  return m;
}

train::ClassifierTask fashion_mnist_task() {
  return {.make_model = fashion_mnist_model,
          .mean = data::kFashionMnistMean,
          .std = data::kFashionMnistStd};
}

}  // namespace nascent::models
