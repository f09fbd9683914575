// What the binding files share: the devices Python tensors live on, and the
// conversions of Python arguments (shapes, scalars, dtypes) to nascent's.
//
// Every tensor made from Python lives on a Device's autodiff backend (a
// wrapper over the device's backend that records nothing unless an input
// requires grad), so that requires_grad works on any tensor, as in PyTorch.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "nascent/autodiff/autodiff.h"
#include "nascent/core/ops.h"
#include "nascent/core/tensor.h"

namespace nascent::python {

namespace py = pybind11;

struct Device {
  std::string name;  // "cpu", "cuda:0"
  std::unique_ptr<Backend> inner;
  std::unique_ptr<autodiff::Backend> ad;
  bool is_cpu() const { return name == "cpu"; }
};

// The device of that name ("cpu", "cuda", "cuda:N"), made on first use and
// kept for the life of the process (tensors point at its backend).
Device& device(const std::string& name);
Device& default_device();
// The device whose backend (or autodiff wrapper) `t` lives on.
Device& device_of(const Tensor& t);
// `t` on its device's autodiff backend (a tensor of the plain backend, such
// as a model's logits, is adopted without a copy).
Tensor on_autodiff(const Tensor& t);
// The plain backend's view of `t` (same storage).
Tensor on_inner(const Tensor& t);

// A device argument: None (the default), a Device or a name.
Device& device_arg(const py::object& d);
// A dtype argument: None gives `fallback`.
DType dtype_arg(const py::object& d, DType fallback);
// A shape given as ints (zeros(2, 3)) or one sequence (zeros((2, 3))).
Shape shape_args(const py::args& args);
Shape shape_seq(const py::handle& seq);
// Axes: None (all), an int or a sequence of ints.
Axes axes_arg(const py::object& dim);
// A Python bool, int or float.
Scalar scalar_arg(const py::handle& v);
// A Tensor, or a Python number made into a 0-d tensor like `like`.
Tensor tensor_or_scalar(const py::handle& v, const Tensor& like);

void bind_errors(py::module_& m);
void bind_tensor(py::module_& m);
void bind_ops(py::module_& m);
void bind_numpy(py::module_& m, py::class_<Tensor>& cls);
void bind_nn(py::module_& m);
void bind_llama(py::module_& m);
void bind_train(py::module_& m);

}  // namespace nascent::python
