// nascent.train(...): the Fashion-MNIST job of `nascent train` (the CNN or
// MLP of models/fashion_mnist.h, the classifier trainer, a checkpoint after
// every epoch), and nascent.models.fashion_mnist(...) to build the same
// model in Python, say to load such a checkpoint into it. Training runs
// without the GIL; the GIL is taken only for the per-epoch callback.
#include <chrono>

#include "nascent/data/dataset.h"
#include "nascent/data/loader.h"
#include "nascent/models/fashion_mnist.h"
#include "nascent/train/classifier.h"
#include "python/src/common.h"

namespace nascent::python {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The first `n` examples of `d` (all of them for n <= 0), for short runs.
data::ImageDataset first(const data::ImageDataset& d, int64_t n) {
  n = n <= 0 ? d.size() : std::min(n, d.size());
  std::vector<uint8_t> pixels(d.image(0), d.image(0) + n * d.image_numel());
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < n; ++i) labels.push_back(d.label(i));
  return data::ImageDataset(std::move(pixels), d.image_shape(),
                            std::move(labels), d.num_classes());
}

py::dict train(const std::string& model, int64_t epochs, int64_t batch_size,
               std::optional<double> lr, const std::string& optimizer,
               uint64_t seed, const py::object& device,
               std::optional<std::string> data_dir,
               std::optional<std::string> output, int64_t train_size,
               int64_t test_size, const py::object& on_epoch) {
  train::TrainOptions o;
  o.model = model;
  o.optimizer = optimizer;
  o.epochs = epochs;
  o.batch_size = batch_size;
  o.lr = lr ? *lr : optimizer == "sgd" ? 0.05 : 1e-3;  // as `nascent train`
  o.seed = seed;
  Device& d = device_arg(device);
  const std::string dir =
      data_dir ? *data_dir : data::default_fashion_mnist_dir();

  py::dict result;
  py::list per_epoch;
  std::optional<data::ImageDataset> train_set, test_set;
  std::optional<train::ClassifierTrainer> trainer;
  {
    py::gil_scoped_release release;
    train_set.emplace(
        first(data::load_fashion_mnist(dir, data::Split::train), train_size));
    test_set.emplace(
        first(data::load_fashion_mnist(dir, data::Split::test), test_size));
    trainer.emplace(o, *d.inner, train_set->size(),
                    models::fashion_mnist_task());
  }
  result["model"] = model;
  result["parameters"] = trainer->model().num_parameters();
  data::DataLoader loader(*train_set, trainer->loader_options(),
                          trainer->backend());
  train::EvalResult test;
  while (trainer->epoch < o.epochs) {
    double loss = 0.0, seconds = 0.0;
    int64_t images = 0;
    {
      py::gil_scoped_release release;
      const auto start = Clock::now();
      Tensor total;
      for (const data::Batch& b : loader.epoch(trainer->epoch)) {
        Tensor l = trainer->step(b).cast(DType::f64);
        total = total.defined() ? total + l : l;
        images += b.labels.numel();
      }
      loss = total.item<double>() / double(loader.num_batches());
      seconds = seconds_since(start);
      ++trainer->epoch;
      if (output) trainer->save(*output);
      test = trainer->evaluate(*test_set);
    }
    py::dict e;
    e["epoch"] = trainer->epoch;
    e["loss"] = loss;
    e["images_per_second"] = double(images) / seconds;
    e["seconds"] = seconds;
    e["test_loss"] = test.loss;
    e["test_accuracy"] = test.accuracy;
    per_epoch.append(e);
    if (!on_epoch.is_none()) on_epoch(e);
  }
  result["epochs"] = per_epoch;
  result["test_accuracy"] = test.accuracy;
  result["checkpoint"] = output ? py::cast(*output) : py::none();
  return result;
}

}  // namespace

void bind_train(py::module_& m) {
  m.def("train", &train, py::kw_only(), py::arg("model") = "cnn",
        py::arg("epochs") = 3, py::arg("batch_size") = 64,
        py::arg("lr") = py::none(), py::arg("optimizer") = "adam",
        py::arg("seed") = 0, py::arg("device") = py::none(),
        py::arg("data") = py::none(), py::arg("output") = py::none(),
        py::arg("train_size") = 0, py::arg("test_size") = 0,
        py::arg("on_epoch") = py::none(),
        R"(Trains the Fashion-MNIST classifier of `nascent train` ("cnn" or
"mlp"; lr defaults to 0.001, or 0.05 for sgd, cosine-annealed to 0) and
returns {"model", "parameters", "epochs": [{"epoch", "loss",
"images_per_second", "seconds", "test_loss", "test_accuracy"}, ...],
"test_accuracy", "checkpoint"}. output: a checkpoint written after every
epoch; train_size/test_size: only the first N images (0: all); on_epoch:
called with each epoch's dict.)");

  py::module_ models =
      m.def_submodule("models", "The models of nascent's built-in jobs");
  models.def(
      "fashion_mnist",
      [](const std::string& kind, const py::object& device, uint64_t seed) {
        auto model =
            models::fashion_mnist_model(kind, *device_arg(device).ad, seed);
        for (Tensor* p : model->parameters()) autodiff::set_requires_grad(*p);
        return model;
      },
      py::arg("kind") = "cnn", py::arg("device") = py::none(),
      py::arg("seed") = 0,
      "The CNN or MLP `nascent train` trains (an nn.Sequential), with "
      "parameters requiring grad. Its inputs are images f32 [N, 1, 28, 28] "
      "scaled as (pixel / 255 - mean) / std.");
  models.attr("fashion_mnist_mean") = data::kFashionMnistMean;
  models.attr("fashion_mnist_std") = data::kFashionMnistStd;
}

}  // namespace nascent::python
