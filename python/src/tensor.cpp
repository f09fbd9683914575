// nascent.Tensor: views, copies, operators, reductions as methods with
// PyTorch's names (dim, keepdim), and autodiff (requires_grad, backward,
// grad, no_grad). NumPy and DLPack interop are in numpy.cpp.
#include <pybind11/operators.h>

#include "python/src/common.h"

namespace nascent::python {

namespace {

using GIL = py::call_guard<py::gil_scoped_release>;

py::tuple shape_tuple(const Shape& s) {
  py::tuple t(s.size());
  for (size_t i = 0; i < s.size(); ++i) t[i] = s[i];
  return t;
}

// A Python number, or a Tensor.
Tensor binary_op(BinaryOp op, const Tensor& a, const py::object& b,
                 bool reflected) {
  if (py::isinstance<Tensor>(b)) {
    const Tensor& t = b.cast<const Tensor&>();
    return reflected ? binary(op, t, a) : binary(op, a, t);
  }
  Scalar s = scalar_arg(b);
  return reflected ? binary(op, s, a) : binary(op, a, s);
}

// t[i], t[a:b:c], t[..., None, 1]: ints select, slices slice, None adds an
// axis, Ellipsis stands for the axes not named; all views.
Tensor index(const Tensor& t, const py::object& key) {
  py::tuple items = py::isinstance<py::tuple>(key) ? key.cast<py::tuple>()
                                                   : py::make_tuple(key);
  int named = 0;
  for (py::handle k : items) {
    named += !(k.is_none() || k.ptr() == Py_Ellipsis);
  }
  if (named > t.ndim()) {
    throw py::index_error("too many indices for a tensor of " +
                          std::to_string(t.ndim()) + " axes");
  }
  Tensor out = t;
  int64_t axis = 0;
  for (py::handle k : items) {
    if (k.ptr() == Py_Ellipsis) {
      axis += t.ndim() - named;
    } else if (k.is_none()) {
      out = out.unsqueeze(axis++);
    } else if (py::isinstance<py::slice>(k)) {
      py::slice s = k.cast<py::slice>();
      size_t start, stop, step, length;
      if (!s.compute(size_t(out.shape(axis)), &start, &stop, &step, &length)) {
        throw py::error_already_set();
      }
      if (int64_t(step) <= 0)
        throw py::value_error("slice step must be positive");
      out = out.slice(axis, int64_t(start), int64_t(start + length * step),
                      int64_t(step));
      ++axis;
    } else {
      int64_t i = k.cast<int64_t>();
      int64_t n = out.shape(axis);
      if (i < -n || i >= n) {
        throw py::index_error(
            "index " + std::to_string(i) + " is out of range for axis " +
            std::to_string(axis) + " of size " + std::to_string(n));
      }
      out = out.select(axis, i < 0 ? i + n : i);
    }
  }
  return out;
}

// with nascent.no_grad(): ... / nascent.enable_grad()
class GradMode {
 public:
  explicit GradMode(bool enabled) : enabled_(enabled) {}
  // A copy (pybind11 returns by value) has entered nothing yet.
  GradMode(const GradMode& other) : enabled_(other.enabled_) {}
  void enter() {
    guards_.push_back(std::make_unique<autodiff::GradModeGuard>(enabled_));
  }
  void exit() {
    if (!guards_.empty()) guards_.pop_back();
  }

 private:
  bool enabled_;
  std::vector<std::unique_ptr<autodiff::GradModeGuard>> guards_;
};

}  // namespace

void bind_tensor(py::module_& m) {
  py::class_<Tensor> cls(m, "Tensor", R"(
An n-dimensional array on a device. Copies of the Python object share the
data; views (reshape, transpose, slicing, ...) copy nothing.)");
  cls.def_property_readonly(
         "shape", [](const Tensor& t) { return shape_tuple(t.shape()); })
      .def(
          "size",
          [](const Tensor& t, py::object dim) -> py::object {
            if (dim.is_none()) return shape_tuple(t.shape());
            return py::int_(t.shape(dim.cast<int64_t>()));
          },
          py::arg("dim") = py::none())
      .def_property_readonly(
          "strides", [](const Tensor& t) { return shape_tuple(t.strides()); })
      .def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly(
          "device", [](const Tensor& t) { return &device_of(t); },
          py::return_value_policy::reference)
      .def_property_readonly("ndim", &Tensor::ndim)
      .def("dim", &Tensor::ndim)
      .def("numel", &Tensor::numel)
      .def_property_readonly("itemsize", &Tensor::itemsize)
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("__len__",
           [](const Tensor& t) {
             if (t.ndim() == 0) throw py::type_error("len() of a 0-d tensor");
             return t.shape(0);
           })
      .def("__getitem__", &index)
      .def("__setitem__",
           [](const Tensor& t, const py::object& key, const py::object& v) {
             Tensor dst = index(t, key);
             if (py::isinstance<Tensor>(v)) {
               assign(dst, v.cast<Tensor>());
             } else {
               assign(dst, scalar_arg(v));
             }
           })
      .def("__repr__",
           [](const Tensor& t) {
             py::object np = py::module_::import("numpy");
             std::string body =
                 t.dtype() == DType::bf16 || !device_of(t).is_cpu()
                     ? std::string()
                     : std::string(py::repr(np.attr("asarray")(t)));
             return "tensor(" + body + (body.empty() ? "" : ", ") +
                    t.to_string() + ", device='" + device_of(t).name + "'" +
                    (autodiff::requires_grad(t) ? ", requires_grad=True" : "") +
                    ")";
           })
      // Views.
      .def("reshape",
           [](const Tensor& t, py::args s) { return t.reshape(shape_args(s)); })
      .def("view",
           [](const Tensor& t, py::args s) { return t.view(shape_args(s)); })
      .def("flatten", &Tensor::flatten, py::arg("start_dim") = 0,
           py::arg("end_dim") = -1)
      .def("transpose", &Tensor::transpose, py::arg("dim0") = -2,
           py::arg("dim1") = -1)
      .def_property_readonly("T",
                             [](const Tensor& t) {
                               std::vector<int64_t> axes(size_t(t.ndim()));
                               for (int i = 0; i < t.ndim(); ++i)
                                 axes[size_t(i)] = t.ndim() - 1 - i;
                               return t.permute(axes);
                             })
      .def("permute",
           [](const Tensor& t, py::args a) { return t.permute(shape_args(a)); })
      .def(
          "squeeze",
          [](const Tensor& t, py::object dim) {
            return dim.is_none() ? t.squeeze() : t.squeeze(dim.cast<int64_t>());
          },
          py::arg("dim") = py::none())
      .def("unsqueeze", &Tensor::unsqueeze, py::arg("dim"))
      .def("expand",
           [](const Tensor& t, py::args s) { return t.expand(shape_args(s)); })
      .def("narrow", &Tensor::narrow, py::arg("dim"), py::arg("start"),
           py::arg("length"))
      .def("select", &Tensor::select, py::arg("dim"), py::arg("index"))
      // Copies.
      .def("contiguous", &Tensor::contiguous)
      .def("clone", &Tensor::clone)
      .def(
          "to",
          [](const Tensor& t, const py::object& target) {
            if (py::isinstance<DType>(target))
              return t.cast(target.cast<DType>());
            Device& d = device_arg(target);
            if (&device_of(t) == &d) return t;
            py::gil_scoped_release release;
            return d.ad->adopt(on_inner(t).to(*d.inner));
          },
          py::arg("target"))
      .def("cpu",
           [](const Tensor& t) {
             Device& d = default_device();
             if (&device_of(t) == &d) return t;
             py::gil_scoped_release release;
             return d.ad->adopt(on_inner(t).to(*d.inner));
           })
      .def("type", [](const Tensor& t, DType d) { return t.cast(d); })
      .def("float", [](const Tensor& t) { return t.cast(DType::f32); })
      .def("double", [](const Tensor& t) { return t.cast(DType::f64); })
      .def("long", [](const Tensor& t) { return t.cast(DType::i64); })
      .def("int", [](const Tensor& t) { return t.cast(DType::i32); })
      .def("half", [](const Tensor& t) { return t.cast(DType::f16); })
      .def("bool", [](const Tensor& t) { return t.cast(DType::boolean); })
      .def("item",
           [](const Tensor& t) -> py::object {
             if (is_floating(t.dtype())) return py::float_(t.item<double>());
             if (t.dtype() == DType::boolean) return py::bool_(t.item<bool>());
             return py::int_(t.item<int64_t>());
           })
      .def("__float__", [](const Tensor& t) { return t.item<double>(); })
      .def("__int__", [](const Tensor& t) { return t.item<int64_t>(); })
      .def("__bool__", [](const Tensor& t) { return t.item<bool>(); })
      .def("tolist", [](const Tensor& t) {
        Tensor c = t.dtype() == DType::bf16 ? t.cast(DType::f32) : t;
        Device& cpu = default_device();
        if (&device_of(c) != &cpu)
          c = cpu.ad->adopt(on_inner(c).to(*cpu.inner));
        return py::module_::import("numpy").attr("asarray")(c).attr("tolist")();
      });
  // Operators: numbers on either side, PyTorch's promotion rules.
  const std::pair<const char*, BinaryOp> ops[] = {{"add", BinaryOp::add},
                                                  {"sub", BinaryOp::sub},
                                                  {"mul", BinaryOp::mul},
                                                  {"truediv", BinaryOp::div},
                                                  {"pow", BinaryOp::pow}};
  for (auto [name, op] : ops) {
    BinaryOp o = op;
    cls.def((std::string("__") + name + "__").c_str(),
            [o](const Tensor& a, const py::object& b) {
              return binary_op(o, a, b, false);
            });
    cls.def((std::string("__r") + name + "__").c_str(),
            [o](const Tensor& a, const py::object& b) {
              return binary_op(o, a, b, true);
            });
  }
  const std::pair<const char*, BinaryOp> cmp[] = {
      {"__eq__", BinaryOp::eq},           {"__ne__", BinaryOp::ne},
      {"__lt__", BinaryOp::lt},           {"__le__", BinaryOp::le},
      {"__gt__", BinaryOp::gt},           {"__ge__", BinaryOp::ge},
      {"__and__", BinaryOp::logical_and}, {"__or__", BinaryOp::logical_or},
      {"__xor__", BinaryOp::logical_xor}};
  for (auto [name, op] : cmp) {
    BinaryOp o = op;
    cls.def(name, [o](const Tensor& a, const py::object& b) {
      return binary_op(o, a, b, false);
    });
  }
  cls.def("__hash__", [](const Tensor& t) {
    return std::hash<const void*>()(t.data().get());
  });
  cls.def("__neg__", [](const Tensor& t) { return -t; })
      .def("__invert__", [](const Tensor& t) { return logical_not(t); })
      .def("__abs__", [](const Tensor& t) { return abs(t); })
      .def(
          "__matmul__",
          [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, GIL())
      .def(
          "__rmatmul__",
          [](const Tensor& a, const Tensor& b) { return matmul(b, a); }, GIL());

  // Autodiff.
  cls.def_property(
         "requires_grad",
         [](const Tensor& t) { return autodiff::requires_grad(t); },
         [](const Tensor& t, bool on) { autodiff::set_requires_grad(t, on); })
      .def(
          "requires_grad_",
          [](const Tensor& t, bool on) {
            autodiff::set_requires_grad(t, on);
            return t;
          },
          py::arg("requires_grad") = true)
      .def_property_readonly("is_leaf",
                             [](const Tensor& t) {
                               return autodiff::is_leaf(t) ||
                                      !autodiff::requires_grad(t);
                             })
      .def_property(
          "grad",
          [](const Tensor& t) -> py::object {
            Tensor g = autodiff::grad(t);
            return g.defined() ? py::cast(g) : py::none();
          },
          [](const Tensor& t, const py::object& g) {
            if (!g.is_none())
              throw py::value_error("grad can only be set to None");
            autodiff::zero_grad(t);
          })
      .def(
          "backward",
          [](const Tensor& t, const py::object& gradient, bool retain_graph,
             bool create_graph) {
            autodiff::BackwardOptions o{.retain_graph = retain_graph,
                                        .create_graph = create_graph};
            if (gradient.is_none()) {
              py::gil_scoped_release release;
              autodiff::backward(t, o);
            } else {
              Tensor g = gradient.cast<Tensor>();
              py::gil_scoped_release release;
              autodiff::backward(t, g, o);
            }
          },
          py::arg("gradient") = py::none(), py::arg("retain_graph") = false,
          py::arg("create_graph") = false)
      .def("detach", [](const Tensor& t) { return autodiff::detach(t); });

  py::class_<GradMode>(m, "_GradMode")
      .def("__enter__", [](GradMode& g) { g.enter(); })
      .def("__exit__", [](GradMode& g, py::args) {
        g.exit();
        return false;
      });
  m.def(
      "no_grad", [] { return GradMode(false); },
      "Context manager: ops inside record nothing (evaluation, parameter "
      "updates).");
  m.def("enable_grad", [] { return GradMode(true); });
  m.def("is_grad_enabled", &autodiff::grad_enabled);
  m.def(
      "grad",
      [](const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
         const std::vector<Tensor>& grad_outputs, bool create_graph) {
        return autodiff::grad(outputs, inputs, grad_outputs, create_graph);
      },
      py::arg("outputs"), py::arg("inputs"),
      py::arg("grad_outputs") = std::vector<Tensor>{},
      py::arg("create_graph") = false, GIL(),
      "d(outputs)/d(inputs), as torch.autograd.grad, without touching .grad.");

  bind_numpy(m, cls);
}

}  // namespace nascent::python
