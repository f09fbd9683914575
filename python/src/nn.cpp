// nascent.nn (modules and losses), nascent.optim (SGD, Adam, AdamW) and
// checkpoints. Modules are made on a device's autodiff backend with their
// parameters requiring grad, as in PyTorch; Python classes may derive from
// nn.Module (forward, register_parameter, register_module).
#include <nlohmann/json.hpp>

#include "nascent/nn/activation.h"
#include "nascent/nn/layers.h"
#include "nascent/nn/loss.h"
#include "nascent/nn/module.h"
#include "nascent/nn/norm.h"
#include "nascent/optim/optimizer.h"
#include "nascent/optim/schedule.h"
#include "nascent/train/checkpoint.h"
#include "python/src/common.h"

namespace nascent::python {

namespace {

using GIL = py::call_guard<py::gil_scoped_release>;
using ModulePtr = std::shared_ptr<nn::Module>;

// The Python side of a module defined in Python.
class PyModule : public nn::Module {
 public:
  std::string describe() const override {
    py::gil_scoped_acquire gil;
    py::function f =
        py::get_override(static_cast<const nn::Module*>(this), "describe");
    if (f) return f().cast<std::string>();
    return "Module";  // No describe() of its own.
  }
  Tensor forward(const Tensor& x) override {
    PYBIND11_OVERRIDE_PURE(Tensor, nn::Module, forward, x);
  }
  Tensor add_parameter(const std::string& name, const Tensor& value) {
    Tensor* slot = register_parameter(name, value);
    autodiff::set_requires_grad(*slot);
    return *slot;
  }
  Tensor add_buffer(const std::string& name, const Tensor& value) {
    return *register_buffer(name, value);
  }
  void add_module(const std::string& name, ModulePtr m) {
    register_module(name, std::move(m));
  }
};

// A module defined in Python (the only kind that registers from Python).
PyModule& py_module(nn::Module& m) {
  auto* p = dynamic_cast<PyModule*>(&m);
  if (!p)
    throw py::type_error(
        "register_*: only modules defined in Python register from Python");
  return *p;
}

// Parameters require grad from the start, as torch.nn.Parameter.
template <class M>
std::shared_ptr<M> with_grad(std::shared_ptr<M> m) {
  for (Tensor* p : m->parameters()) autodiff::set_requires_grad(*p);
  return m;
}

Backend& backend_of(const py::object& device) {
  return *device_arg(device).ad;
}

nn::Reduction reduction_arg(const std::string& r) {
  if (r == "mean") return nn::Reduction::mean;
  if (r == "sum") return nn::Reduction::sum;
  if (r == "none") return nn::Reduction::none;
  throw ValueError("loss: reduction must be 'mean', 'sum' or 'none', got '" +
                   r + "'");
}

py::object json_to_py(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}
nlohmann::json py_to_json(const py::object& o) {
  if (o.is_none()) return nlohmann::json::object();
  return nlohmann::json::parse(
      py::module_::import("json").attr("dumps")(o).cast<std::string>());
}

// The gradients accumulated in the parameters (.grad), undefined where none.
std::vector<Tensor> accumulated(const optim::Optimizer& opt) {
  std::vector<Tensor> grads;
  for (const nn::NamedTensor& p : opt.params())
    grads.push_back(autodiff::grad(*p.tensor));
  return grads;
}

void bind_modules(py::module_& nn) {
  py::class_<nn::Module, PyModule, ModulePtr>(nn, "Module", R"(
The base of modules. A Python subclass defines forward(x) and registers its
parameters and children in __init__:
    self.w = self.register_parameter("w", nascent.ones(4))
    self.fc = self.register_module("fc", nascent.nn.Linear(4, 4)))")
      .def(py::init<>())
      .def("forward", &nn::Module::forward)
      .def("__call__", [](nn::Module& m, const Tensor& x) { return m(x); })
      .def("describe", &nn::Module::describe)
      .def("__repr__", &nn::Module::summary)
      .def("parameters",
           [](nn::Module& m) {
             std::vector<Tensor> out;
             for (Tensor* p : m.parameters()) out.push_back(*p);
             return out;
           })
      .def("named_parameters",
           [](nn::Module& m) {
             std::vector<std::pair<std::string, Tensor>> out;
             for (const nn::NamedTensor& p : m.named_parameters())
               out.emplace_back(p.name, *p.tensor);
             return out;
           })
      .def("named_buffers",
           [](nn::Module& m) {
             std::vector<std::pair<std::string, Tensor>> out;
             for (const nn::NamedTensor& p : m.named_buffers())
               out.emplace_back(p.name, *p.tensor);
             return out;
           })
      .def("num_parameters", &nn::Module::num_parameters)
      .def("state_dict", &nn::Module::state_dict)
      .def("load_state_dict", &nn::Module::load_state_dict,
           py::arg("state_dict"), py::arg("strict") = true)
      .def(
          "train", [](nn::Module& m, bool on) { m.train(on); },
          py::arg("mode") = true)
      .def("eval", &nn::Module::eval)
      .def_property_readonly("training", &nn::Module::is_training)
      .def("zero_grad",
           [](nn::Module& m) {
             for (Tensor* p : m.parameters()) autodiff::zero_grad(*p);
           })
      .def(
          "register_parameter",
          [](nn::Module& self, const std::string& name, const Tensor& value) {
            return py_module(self).add_parameter(name, value);
          },
          py::arg("name"), py::arg("value"))
      .def(
          "register_buffer",
          [](nn::Module& self, const std::string& name, const Tensor& value) {
            return py_module(self).add_buffer(name, value);
          },
          py::arg("name"), py::arg("value"))
      .def(
          "register_module",
          [](nn::Module& self, const std::string& name, ModulePtr m) {
            py_module(self).add_module(name, m);
            return m;
          },
          py::arg("name"), py::arg("module"), py::keep_alive<1, 3>());

  py::class_<nn::Linear, nn::Module, std::shared_ptr<nn::Linear>>(nn, "Linear")
      .def(py::init([](int64_t in, int64_t out, bool bias, uint64_t seed,
                       py::object device, py::object dtype) {
             Generator gen(seed);
             return with_grad(std::make_shared<nn::Linear>(
                 in, out, backend_of(device), gen, bias,
                 dtype_arg(dtype, DType::f32)));
           }),
           py::arg("in_features"), py::arg("out_features"),
           py::arg("bias") = true, py::kw_only(), py::arg("seed") = 0,
           py::arg("device") = py::none(), py::arg("dtype") = py::none())
      .def_property_readonly("weight", [](nn::Linear& l) { return l.weight(); })
      .def_property_readonly("bias", [](nn::Linear& l) -> py::object {
        return l.bias() ? py::cast(*l.bias()) : py::none();
      });
  py::class_<nn::Conv2d, nn::Module, std::shared_ptr<nn::Conv2d>>(nn, "Conv2d")
      .def(py::init([](int64_t in, int64_t out, int64_t k, int64_t stride,
                       int64_t padding, int64_t dilation, int64_t groups,
                       bool bias, uint64_t seed, py::object device,
                       py::object dtype) {
             Generator gen(seed);
             nn::Conv2dOptions o{.kernel = k,
                                 .stride = stride,
                                 .padding = padding,
                                 .dilation = dilation,
                                 .groups = groups,
                                 .bias = bias};
             return with_grad(std::make_shared<nn::Conv2d>(
                 in, out, o, backend_of(device), gen,
                 dtype_arg(dtype, DType::f32)));
           }),
           py::arg("in_channels"), py::arg("out_channels"),
           py::arg("kernel_size"), py::arg("stride") = 1,
           py::arg("padding") = 0, py::arg("dilation") = 1,
           py::arg("groups") = 1, py::arg("bias") = true, py::kw_only(),
           py::arg("seed") = 0, py::arg("device") = py::none(),
           py::arg("dtype") = py::none())
      .def_property_readonly("weight",
                             [](nn::Conv2d& l) { return l.weight(); });
  py::class_<nn::Embedding, nn::Module, std::shared_ptr<nn::Embedding>>(
      nn, "Embedding")
      .def(py::init(
               [](int64_t num, int64_t dim, uint64_t seed, py::object device) {
                 Generator gen(seed);
                 return with_grad(std::make_shared<nn::Embedding>(
                     num, dim, backend_of(device), gen));
               }),
           py::arg("num_embeddings"), py::arg("embedding_dim"), py::kw_only(),
           py::arg("seed") = 0, py::arg("device") = py::none())
      .def_property_readonly("weight",
                             [](nn::Embedding& l) { return l.weight(); });
  py::class_<nn::LayerNorm, nn::Module, std::shared_ptr<nn::LayerNorm>>(
      nn, "LayerNorm")
      .def(py::init([](py::object shape, double eps, bool affine,
                       py::object device) {
             Shape s = py::isinstance<py::int_>(shape)
                           ? Shape{shape.cast<int64_t>()}
                           : shape_seq(shape);
             return with_grad(std::make_shared<nn::LayerNorm>(
                 s, backend_of(device), eps, affine));
           }),
           py::arg("normalized_shape"), py::arg("eps") = 1e-5,
           py::arg("elementwise_affine") = true, py::kw_only(),
           py::arg("device") = py::none());
  py::class_<nn::RMSNorm, nn::Module, std::shared_ptr<nn::RMSNorm>>(nn,
                                                                    "RMSNorm")
      .def(py::init([](py::object shape, double eps, py::object device) {
             Shape s = py::isinstance<py::int_>(shape)
                           ? Shape{shape.cast<int64_t>()}
                           : shape_seq(shape);
             return with_grad(
                 std::make_shared<nn::RMSNorm>(s, backend_of(device), eps));
           }),
           py::arg("normalized_shape"), py::arg("eps") = 1e-6, py::kw_only(),
           py::arg("device") = py::none());
  py::class_<nn::BatchNorm2d, nn::Module, std::shared_ptr<nn::BatchNorm2d>>(
      nn, "BatchNorm2d")
      .def(py::init([](int64_t c, double eps, double momentum, bool affine,
                       py::object device) {
             return with_grad(std::make_shared<nn::BatchNorm2d>(
                 c, backend_of(device), eps, momentum, affine));
           }),
           py::arg("num_features"), py::arg("eps") = 1e-5,
           py::arg("momentum") = 0.1, py::arg("affine") = true, py::kw_only(),
           py::arg("device") = py::none());
  py::class_<nn::Dropout, nn::Module, std::shared_ptr<nn::Dropout>>(nn,
                                                                    "Dropout")
      .def(py::init([](double p, uint64_t seed, py::object device) {
             return std::make_shared<nn::Dropout>(p, backend_of(device), seed);
           }),
           py::arg("p") = 0.5, py::kw_only(), py::arg("seed") = 0,
           py::arg("device") = py::none());
  py::class_<nn::MaxPool2d, nn::Module, std::shared_ptr<nn::MaxPool2d>>(
      nn, "MaxPool2d")
      .def(py::init<int64_t, int64_t, int64_t>(), py::arg("kernel_size"),
           py::arg("stride") = 0, py::arg("padding") = 0);
  py::class_<nn::AvgPool2d, nn::Module, std::shared_ptr<nn::AvgPool2d>>(
      nn, "AvgPool2d")
      .def(py::init<int64_t, int64_t, int64_t, bool>(), py::arg("kernel_size"),
           py::arg("stride") = 0, py::arg("padding") = 0,
           py::arg("count_include_pad") = true);
  py::class_<nn::Flatten, nn::Module, std::shared_ptr<nn::Flatten>>(nn,
                                                                    "Flatten")
      .def(py::init<int64_t, int64_t>(), py::arg("start_dim") = 1,
           py::arg("end_dim") = -1);
  py::class_<nn::ReLU, nn::Module, std::shared_ptr<nn::ReLU>>(nn, "ReLU")
      .def(py::init<>());
  py::class_<nn::SiLU, nn::Module, std::shared_ptr<nn::SiLU>>(nn, "SiLU")
      .def(py::init<>());
  py::class_<nn::Tanh, nn::Module, std::shared_ptr<nn::Tanh>>(nn, "Tanh")
      .def(py::init<>());
  py::class_<nn::Sigmoid, nn::Module, std::shared_ptr<nn::Sigmoid>>(nn,
                                                                    "Sigmoid")
      .def(py::init<>());
  py::class_<nn::GELU, nn::Module, std::shared_ptr<nn::GELU>>(nn, "GELU")
      .def(py::init([](const std::string& approximate) {
             return std::make_shared<nn::GELU>(approximate == "tanh");
           }),
           py::arg("approximate") = "none");
  py::class_<nn::Softmax, nn::Module, std::shared_ptr<nn::Softmax>>(nn,
                                                                    "Softmax")
      .def(py::init<int64_t>(), py::arg("dim") = -1);
  py::class_<nn::Sequential, nn::Module, std::shared_ptr<nn::Sequential>>(
      nn, "Sequential")
      .def(py::init([](py::args modules) {
             auto s = std::make_shared<nn::Sequential>();
             for (py::handle m : modules) s->add(m.cast<ModulePtr>());
             return s;
           }),
           // The modules' Python objects (a Python subclass's forward lives
           // there) stay alive with the Sequential.
           py::keep_alive<1, 2>())
      .def(
          "append",
          [](nn::Sequential& s, ModulePtr m) {
            s.add(std::move(m));
            return &s;
          },
          py::keep_alive<1, 2>(), py::return_value_policy::reference)
      .def("__len__", &nn::Sequential::size)
      .def(
          "__getitem__",
          [](nn::Sequential& s, size_t i) -> nn::Module& {
            if (i >= s.size())
              throw py::index_error("Sequential index out of range");
            return s[i];
          },
          py::return_value_policy::reference_internal);

  // Losses (nn.functional's names).
  nn.def(
      "cross_entropy",
      [](const Tensor& logits, const Tensor& target, int64_t ignore_index,
         double label_smoothing, const std::string& reduction) {
        return nn::cross_entropy(logits, target,
                                 {.ignore_index = ignore_index,
                                  .label_smoothing = label_smoothing,
                                  .reduction = reduction_arg(reduction)});
      },
      py::arg("input"), py::arg("target"), py::arg("ignore_index") = -100,
      py::arg("label_smoothing") = 0.0, py::arg("reduction") = "mean");
  nn.def(
      "nll_loss",
      [](const Tensor& logp, const Tensor& target, int64_t ignore_index,
         const std::string& reduction) {
        return nn::nll_loss(logp, target,
                            {.ignore_index = ignore_index,
                             .reduction = reduction_arg(reduction)});
      },
      py::arg("input"), py::arg("target"), py::arg("ignore_index") = -100,
      py::arg("reduction") = "mean");
  nn.def(
      "mse_loss",
      [](const Tensor& a, const Tensor& b, const std::string& reduction) {
        return nn::mse_loss(a, b, reduction_arg(reduction));
      },
      py::arg("input"), py::arg("target"), py::arg("reduction") = "mean");
  nn.def(
      "binary_cross_entropy_with_logits",
      [](const Tensor& a, const Tensor& b, const std::string& reduction,
         const std::optional<Tensor>& pos_weight) {
        return nn::binary_cross_entropy_with_logits(
            a, b, reduction_arg(reduction),
            pos_weight ? &*pos_weight : nullptr);
      },
      py::arg("input"), py::arg("target"), py::arg("reduction") = "mean",
      py::arg("pos_weight") = py::none());
}

void bind_optim(py::module_& optim) {
  py::class_<optim::Optimizer>(optim, "Optimizer")
      .def(
          "step",
          [](optim::Optimizer& o) {
            std::vector<Tensor> grads = accumulated(o);
            py::gil_scoped_release release;
            autodiff::NoGradGuard no_grad;
            o.step(grads);
          },
          "Updates the parameters with their accumulated gradients (.grad).")
      .def("zero_grad",
           [](optim::Optimizer& o) {
             for (const nn::NamedTensor& p : o.params())
               autodiff::zero_grad(*p.tensor);
           })
      .def_property("lr", &optim::Optimizer::lr, &optim::Optimizer::set_lr)
      .def_property_readonly("step_count", &optim::Optimizer::step_count)
      .def_property_readonly("name", &optim::Optimizer::name);
  py::class_<optim::SGD, optim::Optimizer>(optim, "SGD")
      .def(py::init([](nn::Module& m, double lr, double momentum,
                       double dampening, double weight_decay, bool nesterov) {
             return new optim::SGD(m.named_parameters(),
                                   {.lr = lr,
                                    .momentum = momentum,
                                    .dampening = dampening,
                                    .weight_decay = weight_decay,
                                    .nesterov = nesterov});
           }),
           py::arg("module"), py::arg("lr") = 0.01, py::arg("momentum") = 0.0,
           py::arg("dampening") = 0.0, py::arg("weight_decay") = 0.0,
           py::arg("nesterov") = false, py::keep_alive<1, 2>());
  const auto adam = [](auto* cls, double default_decay) {
    cls->def(
        py::init([](nn::Module& m, double lr, std::pair<double, double> betas,
                    double eps, double weight_decay) {
          using T = typename std::remove_pointer_t<decltype(cls)>::type;
          return new T(m.named_parameters(), {.lr = lr,
                                              .beta1 = betas.first,
                                              .beta2 = betas.second,
                                              .eps = eps,
                                              .weight_decay = weight_decay});
        }),
        py::arg("module"), py::arg("lr") = 1e-3,
        py::arg("betas") = std::make_pair(0.9, 0.999), py::arg("eps") = 1e-8,
        py::arg("weight_decay") = default_decay, py::keep_alive<1, 2>());
  };
  py::class_<optim::Adam, optim::Optimizer> adam_cls(optim, "Adam");
  adam(&adam_cls, 0.0);
  py::class_<optim::AdamW, optim::Adam> adamw_cls(optim, "AdamW");
  adam(&adamw_cls, 0.01);  // PyTorch's default

  // Schedules are functions of the step: opt.lr = sched(opt.step_count).
  using SchedulePtr = std::shared_ptr<optim::Schedule>;
  py::class_<optim::Schedule, SchedulePtr>(optim, "Schedule")
      .def("lr", &optim::Schedule::lr, py::arg("step"))
      .def("__call__", &optim::Schedule::lr, py::arg("step"))
      .def("__repr__", &optim::Schedule::describe);
  py::class_<optim::ConstantLR, optim::Schedule,
             std::shared_ptr<optim::ConstantLR>>(optim, "ConstantLR")
      .def(py::init<double>(), py::arg("lr"));
  py::class_<optim::StepLR, optim::Schedule, std::shared_ptr<optim::StepLR>>(
      optim, "StepLR")
      .def(py::init<double, int64_t, double>(), py::arg("lr"),
           py::arg("step_size"), py::arg("gamma") = 0.1);
  py::class_<optim::CosineLR, optim::Schedule,
             std::shared_ptr<optim::CosineLR>>(optim, "CosineLR")
      .def(py::init<double, int64_t, double>(), py::arg("lr"),
           py::arg("total_steps"), py::arg("min_lr") = 0.0);
  py::class_<optim::WarmupLR, optim::Schedule,
             std::shared_ptr<optim::WarmupLR>>(optim, "WarmupLR")
      .def(py::init([](SchedulePtr after, int64_t warmup, double start) {
             return std::make_shared<optim::WarmupLR>(std::move(after), warmup,
                                                      start);
           }),
           py::arg("after"), py::arg("warmup_steps"),
           py::arg("start_factor") = 0.0);
}

}  // namespace

void bind_nn(py::module_& m) {
  py::module_ nn = m.def_submodule("nn", "Modules and losses");
  bind_modules(nn);
  py::module_ optim = m.def_submodule("optim", "Optimizers");
  bind_optim(optim);
  m.def(
      "save_checkpoint",
      [](const std::string& path, nn::Module& model,
         const optim::Optimizer* opt, const py::object& training) {
        nlohmann::json j = py_to_json(training);
        py::gil_scoped_release release;
        train::save_checkpoint(path, model, opt, j);
      },
      py::arg("path"), py::arg("model"), py::arg("optimizer") = nullptr,
      py::arg("training") = py::none(),
      "Writes the model's state (and the optimizer's) as one safetensors "
      "file.");
  m.def(
      "load_checkpoint",
      [](const std::string& path, nn::Module& model, optim::Optimizer* opt) {
        nlohmann::json j;
        {
          py::gil_scoped_release release;
          autodiff::NoGradGuard no_grad;  // writes into the parameters
          j = train::load_checkpoint(path, model, opt);
        }
        return json_to_py(j);
      },
      py::arg("path"), py::arg("model"), py::arg("optimizer") = nullptr,
      "Reads a checkpoint into the model (and optimizer); returns its training "
      "dict.");
}

}  // namespace nascent::python
