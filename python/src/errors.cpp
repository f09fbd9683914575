// nascent's errors as Python exceptions of matching classes, with the same
// messages: nascent.Error (a RuntimeError) and its kinds, each also an
// instance of the built-in class a Python user would catch (ShapeError and
// ValueError are ValueErrors, DTypeError a TypeError, IoError an OSError,
// OutOfMemory a MemoryError).
#include "nascent/io/file.h"
#include "python/src/common.h"

namespace nascent::python {

namespace {

PyObject* make_class(py::module_& m, const char* name, PyObject* base,
                     PyObject* builtin) {
  std::string full = std::string("nascent.") + name;
  // py::tuple on both sides: pybind11 3's make_tuple types its result.
  py::tuple bases =
      builtin ? py::tuple(py::make_tuple(py::handle(base), py::handle(builtin)))
              : py::tuple(py::make_tuple(py::handle(base)));
  PyObject* cls = PyErr_NewException(full.c_str(), bases.ptr(), nullptr);
  if (!cls) throw py::error_already_set();
  m.add_object(name, py::handle(cls));
  return cls;
}

}  // namespace

void bind_errors(py::module_& m) {
  static PyObject* error = make_class(m, "Error", PyExc_RuntimeError, nullptr);
  static PyObject* shape = make_class(m, "ShapeError", error, PyExc_ValueError);
  static PyObject* dtype = make_class(m, "DTypeError", error, PyExc_TypeError);
  static PyObject* value = make_class(m, "ValueError", error, PyExc_ValueError);
  static PyObject* backend = make_class(m, "BackendError", error, nullptr);
  static PyObject* format =
      make_class(m, "FormatError", error, PyExc_ValueError);
  static PyObject* oom = make_class(m, "OutOfMemory", error, PyExc_MemoryError);
  static PyObject* io = make_class(m, "IoError", error, PyExc_OSError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ShapeError& e) {
      PyErr_SetString(shape, e.what());
    } catch (const DTypeError& e) {
      PyErr_SetString(dtype, e.what());
    } catch (const ValueError& e) {
      PyErr_SetString(value, e.what());
    } catch (const BackendError& e) {
      PyErr_SetString(backend, e.what());
    } catch (const FormatError& e) {
      PyErr_SetString(format, e.what());
    } catch (const OutOfMemory& e) {
      PyErr_SetString(oom, e.what());
    } catch (const IoError& e) {
      PyErr_SetString(io, e.what());
    } catch (const Error& e) {  // jinja::TemplateError, onnx::UnsupportedError
      PyErr_SetString(error, e.what());
    }
  });
}

}  // namespace nascent::python
