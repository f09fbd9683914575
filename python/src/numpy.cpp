// NumPy and DLPack without copies where the memory allows:
//   np.asarray(t), t.numpy()   the array interface over a CPU tensor's
//                              storage (any strides; the array keeps the
//                              tensor alive)
//   nascent.from_numpy(a)      a tensor over the array's memory (which it
//                              keeps alive); negative or odd strides copy
//   t.__dlpack__()             a DLPack capsule (torch.from_dlpack(t),
//                              np.from_dlpack(t))
//   nascent.from_dlpack(x)     a tensor over any DLPack producer's CPU
//                              memory (torch.Tensor, np.ndarray)
// bf16 has no NumPy type, so np.asarray refuses it (DLPack carries it).
#include <cstring>

#include "nascent/backends/cpu/backend.h"
#include "python/src/common.h"

namespace nascent::python {

namespace {

// DLPack's ABI (v0.8, dlpack.h), the part exchanged here.
struct DLDevice {
  int32_t device_type;  // 1: CPU.
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // 0 int, 1 uint, 2 float, 4 bfloat, 6 bool.
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // In elements; null means compact row-major.
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};
constexpr int32_t kDLCPU = 1;

const char* buffer_format(DType d) {
  switch (d) {
    case DType::f32:
      return "f";
    case DType::f64:
      return "d";
    case DType::f16:
      return "e";
    case DType::i32:
      return "i";
    case DType::i64:
      return "q";
    case DType::u8:
      return "B";
    case DType::boolean:
      return "?";
    case DType::bf16:
      break;
  }
  throw DTypeError(
      "numpy: bf16 has no NumPy type; cast the tensor first (t.float())");
}

DType from_format(const std::string& f, size_t itemsize) {
  // One type character after an optional byte-order mark ("<f", "=f", "f");
  // anything longer ("Zf", complex) has no nascent dtype.
  const std::string t = f.find_first_of("@=<>") == 0 ? f.substr(1) : f;
  const char c = t.size() == 1 ? t[0] : '\0';
  DType d = DType::f32;
  bool known = true;
  switch (c) {
    case 'f':
      d = DType::f32;
      break;
    case 'd':
      d = DType::f64;
      break;
    case 'e':
      d = DType::f16;
      break;
    case 'i':
      d = DType::i32;
      break;
    case 'l':
    case 'q':
      d = DType::i64;
      break;
    case 'B':
      d = DType::u8;
      break;
    case '?':
      d = DType::boolean;
      break;
    default:
      known = false;
      break;
  }
  if (known && size_of(d) == itemsize) return d;
  throw DTypeError("from_numpy: arrays of format '" + f + "' (" +
                   std::to_string(itemsize) +
                   " bytes) have no nascent dtype; "
                   "nascent has float32/64/16, int32/64, uint8 and bool");
}

// The CPU storage of `t`, or a DTypeError/BackendError saying why not.
std::byte* cpu_bytes(const Tensor& t, const char* what) {
  Tensor inner = on_inner(t);
  if (dynamic_cast<cpu::Backend*>(&inner.backend()) == nullptr) {
    throw BackendError(std::string(what) + ": " + t.to_string() + " is on " +
                       device_of(t).name + "; call .cpu() first");
  }
  return cpu::byte_ptr(inner);
}

// A CPU tensor over `data`, which `owner` keeps alive.
Tensor wrap(std::shared_ptr<const void> owner, void* data, const Shape& shape,
            const Strides& strides, DType dtype) {
  Device& cpu = default_device();
  size_t extent = 1;  // Bytes from data to one past the last element.
  bool empty = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    empty = empty || shape[i] == 0;
    extent += size_t((shape[i] - 1) * strides[i]);
  }
  extent = empty ? 0 : extent * size_of(dtype);
  auto storage = cpu.inner->wrap(std::move(owner), data, extent);
  return cpu.ad->adopt(
      Tensor::make(shape, strides, 0, dtype, *cpu.inner, std::move(storage)));
}

// Holds a Python object (the NumPy array) alive from C++, taking the GIL to
// let it go: the last tensor may die on a thread without it.
std::shared_ptr<const void> keep(py::object obj) {
  auto* held = new py::object(std::move(obj));
  return std::shared_ptr<const void>(held, [](const void* p) {
    py::gil_scoped_acquire gil;
    delete static_cast<const py::object*>(p);
  });
}

Tensor from_numpy(py::buffer b) {
  py::buffer_info info = b.request();
  DType dt = from_format(info.format, size_t(info.itemsize));
  Shape shape(info.shape.begin(), info.shape.end());
  Strides strides;
  bool viewable = size_of(dt) == size_t(info.itemsize);
  for (py::ssize_t s : info.strides) {
    viewable = viewable && s >= 0 && s % info.itemsize == 0;
    strides.push_back(s / info.itemsize);
  }
  if (!viewable) {  // Negative or unaligned strides: a contiguous copy.
    py::object np = py::module_::import("numpy");
    return from_numpy(np.attr("ascontiguousarray")(b));
  }
  return wrap(keep(b), info.ptr, shape, strides, dt);
}

DLDataType dl_dtype(DType d) {
  switch (d) {
    case DType::f32:
      return {2, 32, 1};
    case DType::f64:
      return {2, 64, 1};
    case DType::f16:
      return {2, 16, 1};
    case DType::bf16:
      return {4, 16, 1};
    case DType::i32:
      return {0, 32, 1};
    case DType::i64:
      return {0, 64, 1};
    case DType::u8:
      return {1, 8, 1};
    case DType::boolean:
      return {6, 8, 1};
  }
  return {};
}

DType from_dl(DLDataType t) {
  const DType all[] = {DType::f32, DType::f64, DType::f16, DType::bf16,
                       DType::i32, DType::i64, DType::u8,  DType::boolean};
  for (DType d : all) {
    DLDataType x = dl_dtype(d);
    if (x.code == t.code && x.bits == t.bits && t.lanes == 1) return d;
  }
  // NumPy exports bool as uint8 of 8 bits in older versions: code 1 above.
  throw DTypeError("from_dlpack: DLPack type code " + std::to_string(t.code) +
                   ", " + std::to_string(t.bits) + " bits, " +
                   std::to_string(t.lanes) + " lanes has no nascent dtype");
}

struct Exported {
  DLManagedTensor managed;
  Tensor tensor;  // Keeps the storage alive.
  Shape shape;
  Strides strides;
};

py::capsule to_dlpack(const Tensor& t) {
  std::byte* data = cpu_bytes(t, "__dlpack__");
  auto* e = new Exported{{}, t, t.shape(), t.strides()};
  DLTensor& dl = e->managed.dl_tensor;
  dl.data = data;
  dl.device = {kDLCPU, 0};
  dl.ndim = t.ndim();
  dl.dtype = dl_dtype(t.dtype());
  dl.shape = e->shape.data();
  dl.strides = e->strides.data();
  dl.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<Exported*>(self->manager_ctx);
  };
  // A capsule nobody consumed frees the tensor; a consumer renames it to
  // "used_dltensor" and calls the deleter itself.
  return py::capsule(&e->managed, "dltensor", [](PyObject* cap) {
    if (PyCapsule_IsValid(cap, "dltensor")) {
      auto* m =
          static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
      m->deleter(m);
    }
  });
}

Tensor from_dlpack(py::object x) {
  py::capsule cap = py::hasattr(x, "__dlpack__")
                        ? x.attr("__dlpack__")().cast<py::capsule>()
                        : x.cast<py::capsule>();
  if (std::strcmp(cap.name(), "dltensor") != 0) {
    throw py::value_error("from_dlpack: the capsule was already consumed");
  }
  auto* m = static_cast<DLManagedTensor*>(cap.get_pointer());
  const DLTensor& dl = m->dl_tensor;
  if (dl.device.device_type != kDLCPU) {
    throw BackendError(
        "from_dlpack: only CPU memory (DLPack device type 1) "
        "can be shared, not device type " +
        std::to_string(dl.device.device_type));
  }
  DType dt = from_dl(dl.dtype);
  Shape shape(dl.shape, dl.shape + dl.ndim);
  Strides strides(size_t(dl.ndim));
  int64_t run = 1;
  for (int i = dl.ndim - 1; i >= 0; --i) {
    strides[size_t(i)] = dl.strides ? dl.strides[i] : run;
    if (strides[size_t(i)] < 0) {
      throw ValueError("from_dlpack: negative strides are not supported");
    }
    run *= shape[size_t(i)];
  }
  PyCapsule_SetName(cap.ptr(), "used_dltensor");
  std::shared_ptr<const void> owner(m, [](const void* p) {
    auto* mt = static_cast<DLManagedTensor*>(const_cast<void*>(p));
    if (mt->deleter) mt->deleter(mt);
  });
  return wrap(std::move(owner),
              static_cast<std::byte*>(dl.data) + dl.byte_offset, shape, strides,
              dt);
}

}  // namespace

void bind_numpy(py::module_& m, py::class_<Tensor>& cls) {
  // NumPy's array interface rather than the buffer protocol: pybind11 2.10
  // cannot raise from a buffer request (bf16, a GPU tensor), and NumPy
  // keeps the tensor as the array's base, so the storage stays alive.
  cls.def_property_readonly("__array_interface__", [](const Tensor& t) {
    std::byte* data = cpu_bytes(t, "numpy");
    const char f = buffer_format(t.dtype())[0];
    const char kind = f == '?'                 ? 'b'
                      : f == 'B'               ? 'u'
                      : (f == 'i' || f == 'q') ? 'i'
                                               : 'f';
    const std::string typestr = std::string(t.itemsize() == 1 ? "|" : "<") +
                                kind + std::to_string(t.itemsize());
    py::tuple strides(size_t(t.ndim()));
    py::tuple shape(size_t(t.ndim()));
    for (size_t i = 0; i < size_t(t.ndim()); ++i) {
      shape[i] = t.shape()[i];
      strides[i] = t.strides()[i] * int64_t(t.itemsize());
    }
    py::dict d;
    d["shape"] = shape;
    d["typestr"] = typestr;
    d["data"] = py::make_tuple(reinterpret_cast<uintptr_t>(data), false);
    d["strides"] = strides;
    d["version"] = 3;
    return d;
  });
  cls.def(
         "numpy",
         [](const Tensor& t) {
           return py::module_::import("numpy").attr("asarray")(t);
         },
         "A NumPy array over the same memory (CPU tensors).")
      .def(
          "data_ptr",
          [](const Tensor& t) {
            return reinterpret_cast<uintptr_t>(cpu_bytes(t, "data_ptr"));
          },
          "The address of the first element (CPU tensors).")
      .def(
          "__dlpack__",
          [](const Tensor& t, py::object stream) { return to_dlpack(t); },
          py::arg("stream") = py::none())
      .def("__dlpack_device__", [](const Tensor& t) {
        cpu_bytes(t, "__dlpack_device__");
        return py::make_tuple(kDLCPU, 0);
      });
  m.def("from_numpy", &from_numpy, py::arg("array"),
        "A CPU tensor sharing the array's memory (no copy, unless its strides "
        "are negative or not whole elements).");
  m.def("from_dlpack", &from_dlpack, py::arg("x"),
        "A CPU tensor sharing a DLPack producer's memory (torch.Tensor, "
        "np.ndarray, or a capsule).");
  m.def(
      "tensor",
      [](py::object data, py::object dtype, py::object device,
         bool requires_grad) {
        py::object np = py::module_::import("numpy");
        py::object a = np.attr("array")(data);  // A copy, as torch.tensor.
        if (a.attr("dtype").attr("kind").cast<std::string>() == "f" &&
            dtype.is_none() &&
            a.attr("dtype").attr("itemsize").cast<int>() == 8 &&
            !py::isinstance(data, np.attr("ndarray"))) {
          a = a.attr("astype")("float32");  // Python floats: float32, as torch
        }
        if (a.attr("dtype").attr("kind").cast<std::string>() == "i" &&
            a.attr("dtype").attr("itemsize").cast<int>() == 8) {
          a = a.attr("astype")("int64");
        }
        Tensor t = from_numpy(a);
        if (!dtype.is_none()) t = t.cast(dtype.cast<DType>());
        Device& d = device_arg(device);
        if (!d.is_cpu()) t = d.ad->adopt(on_inner(t).to(*d.inner));
        if (requires_grad) autodiff::set_requires_grad(t);
        return t;
      },
      py::arg("data"), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false,
      "A new tensor holding a copy of data (nested lists, numbers, arrays).");
}

}  // namespace nascent::python
