// The extension module nascent._nascent (python/nascent/__init__.py
// re-exports it): devices, dtypes, errors, and the binding files' parts.
#include <map>
#include <mutex>

#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/backends/device.h"
#include "python/src/common.h"

namespace nascent::python {

namespace {

std::mutex devices_mutex;
std::map<std::string, std::unique_ptr<Device>>& devices() {
  // Never destroyed: tensors held by Python objects freed at exit still
  // point at these backends.
  static auto* map = new std::map<std::string, std::unique_ptr<Device>>();
  return *map;
}

}  // namespace

Device& device(const std::string& name) {
  std::string key = name == "cuda" ? "cuda:0" : name;
  std::lock_guard<std::mutex> lock(devices_mutex);
  auto it = devices().find(key);
  if (it != devices().end()) return *it->second;
  auto d = std::make_unique<Device>();
  d->name = key;
  d->inner = make_backend(key);  // ValueError / BackendError as in C++
  d->ad = std::make_unique<autodiff::Backend>(*d->inner);
  return *devices().emplace(key, std::move(d)).first->second;
}

Device& default_device() {
  static Device& cpu = device("cpu");
  return cpu;
}

Device& device_of(const Tensor& t) {
  const Backend* b = &t.backend();
  std::lock_guard<std::mutex> lock(devices_mutex);
  for (auto& [name, d] : devices()) {
    if (b == d->ad.get() || b == d->inner.get()) return *d;
  }
  throw BackendError("nascent: tensor " + t.to_string() + " is on backend " +
                     t.backend().name() + ", which Python did not make");
}

Tensor on_autodiff(const Tensor& t) {
  Device& d = device_of(t);
  return &t.backend() == d.ad.get() ? t : d.ad->adopt(t);
}

Tensor on_inner(const Tensor& t) {
  Device& d = device_of(t);
  return &t.backend() == d.ad.get() ? d.ad->unwrap(t) : t;
}

Device& device_arg(const py::object& d) {
  if (d.is_none()) return default_device();
  if (py::isinstance<py::str>(d)) return device(d.cast<std::string>());
  return *d.cast<Device*>();
}

DType dtype_arg(const py::object& d, DType fallback) {
  return d.is_none() ? fallback : d.cast<DType>();
}

Shape shape_seq(const py::handle& seq) {
  Shape s;
  for (py::handle v : seq) s.push_back(v.cast<int64_t>());
  return s;
}

Shape shape_args(const py::args& args) {
  if (args.size() == 1 && !py::isinstance<py::int_>(args[0])) {
    return shape_seq(args[0]);
  }
  return shape_seq(args);
}

Axes axes_arg(const py::object& dim) {
  if (dim.is_none()) return {};
  if (py::isinstance<py::int_>(dim)) return {dim.cast<int64_t>()};
  return shape_seq(dim);
}

Scalar scalar_arg(const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return Scalar(int64_t(v.cast<bool>()));
  if (py::isinstance<py::int_>(v)) return Scalar(v.cast<int64_t>());
  if (py::isinstance<py::float_>(v)) return Scalar(v.cast<double>());
  throw py::type_error("nascent: expected a Tensor or a number, got " +
                       std::string(py::str(py::type::of(v))));
}

Tensor tensor_or_scalar(const py::handle& v, const Tensor& like) {
  if (py::isinstance<Tensor>(v)) return v.cast<Tensor>();
  Scalar s = scalar_arg(v);
  DType dt =
      s.is_integral() || is_floating(like.dtype()) ? like.dtype() : DType::f32;
  if (py::isinstance<py::bool_>(v) && like.dtype() == DType::boolean) {
    dt = DType::boolean;
  }
  return full({}, s, like.backend(), dt);
}

}  // namespace nascent::python

PYBIND11_MODULE(_nascent, m) {
  using namespace nascent;
  using namespace nascent::python;
  m.doc() = "nascent: tensors, autodiff, nn, optimizers and LLaMA inference";
  bind_errors(m);

  py::enum_<DType>(m, "dtype")
      .value("float32", DType::f32)
      .value("float64", DType::f64)
      .value("float16", DType::f16)
      .value("bfloat16", DType::bf16)
      .value("int32", DType::i32)
      .value("int64", DType::i64)
      .value("uint8", DType::u8)
      .value("bool", DType::boolean)
      .def_property_readonly("itemsize", [](DType d) { return size_of(d); })
      .def_property_readonly("is_floating_point",
                             [](DType d) { return is_floating(d); })
      .def("__str__", [](DType d) { return std::string(name(d)); });

  py::class_<Device>(m, "Device")
      .def(py::init([](const std::string& name) { return &device(name); }),
           py::return_value_policy::reference, py::arg("name"))
      .def_property_readonly(
          "type",
          [](const Device& d) { return d.name.substr(0, d.name.find(':')); })
      .def_property_readonly("index",
                             [](const Device& d) -> py::object {
                               size_t c = d.name.find(':');
                               if (c == std::string::npos) return py::none();
                               return py::int_(std::stoi(d.name.substr(c + 1)));
                             })
      .def("__str__", [](const Device& d) { return d.name; })
      .def("__repr__",
           [](const Device& d) { return "device('" + d.name + "')"; })
      .def("__eq__", [](const Device& a, const Device& b) { return &a == &b; })
      .def("__hash__",
           [](const Device& d) { return std::hash<std::string>()(d.name); })
      .def("describe",
           [](const Device& d) { return describe_backend(*d.inner); })
      .def("memory_stats", [](const Device& d) {
        MemoryStats s = d.inner->memory_stats();
        py::dict r;
        r["allocated_bytes"] = s.allocated_bytes;
        r["cached_bytes"] = s.cached_bytes;
        r["persistent_bytes"] = s.persistent_bytes;
        r["peak_bytes"] = s.peak_bytes;
        return r;
      });
  m.def(
      "device", [](const std::string& name) { return &device(name); },
      py::return_value_policy::reference, py::arg("name"));
  m.def(
      "cpu", [] { return &device("cpu"); }, py::return_value_policy::reference);
  m.def(
      "cuda",
      [](int index) { return &device("cuda:" + std::to_string(index)); },
      py::return_value_policy::reference, py::arg("index") = 0);
  m.def(
      "webgpu", [] { return &device("webgpu"); },
      py::return_value_policy::reference);
  m.def("device_names", &device_names,
        "The device names this build understands (\"cpu\", and \"cuda\" "
        "and \"webgpu\" when those backends are compiled in).");
  m.def("set_num_threads", &cpu::set_num_threads, py::arg("n"));
  m.def("get_num_threads", &cpu::num_threads);

  bind_tensor(m);
  bind_ops(m);
  bind_nn(m);
  bind_llama(m);
  bind_train(m);
}
