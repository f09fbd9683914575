// Tensor: a cheap value handle (shared ownership) to a shape, strides, an
// offset, a dtype, a Backend and the backend's opaque BackendData.
//
// Views (reshape of contiguous data, transpose, permute, slice, expand,
// squeeze, unsqueeze) share the BackendData and copy nothing. Reading the
// values goes through Backend::materialize, the one way out of a backend.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "nascent/core/backend.h"
#include "nascent/core/dtype.h"
#include "nascent/core/error.h"
#include "nascent/core/shape.h"

namespace nascent {

// State a wrapping backend (autodiff) keeps per tensor handle.
class TensorExtra {
 public:
  virtual ~TensorExtra() = default;
};

class Tensor {
 public:
  Tensor() = default;  // An undefined tensor; most calls on it throw.

  // Wraps storage that `backend` allocated. Checks that the view fits.
  static Tensor make(Shape shape, Strides strides, int64_t offset, DType dtype,
                     Backend& backend, std::shared_ptr<BackendData> data);
  // Allocates contiguous, uninitialised storage.
  static Tensor empty(const Shape& shape, DType dtype, Backend& backend);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  int64_t shape(int64_t axis) const;  // Axis may be negative.
  const Strides& strides() const { return impl().strides; }
  int64_t offset() const { return impl().offset; }
  DType dtype() const { return impl().dtype; }
  Backend& backend() const { return *impl().backend; }
  const std::shared_ptr<BackendData>& data() const { return impl().data; }
  int ndim() const { return int(impl().shape.size()); }
  int64_t numel() const { return impl().numel; }
  size_t itemsize() const { return size_of(dtype()); }
  bool is_contiguous() const;
  // Same storage, offset, shape and strides: writes through one show in the
  // other.
  bool same_view(const Tensor& other) const;
  std::string to_string() const;  // Shape and dtype, e.g. "f32[2, 3]".

  // Views.
  Tensor reshape(Shape shape) const;  // Copies only if not viewable.
  Tensor view(Shape shape) const;     // Throws if a copy would be needed.
  Tensor flatten(int64_t start = 0, int64_t end = -1) const;
  Tensor transpose(int64_t a = -2, int64_t b = -1) const;
  Tensor permute(const std::vector<int64_t>& axes) const;
  Tensor slice(int64_t axis, int64_t start, int64_t stop,
               int64_t step = 1) const;  // Python rules; clamps the range.
  Tensor narrow(int64_t axis, int64_t start, int64_t length) const;
  Tensor select(int64_t axis, int64_t index) const;  // Drops the axis.
  Tensor expand(const Shape& shape) const;  // Size-1 axes grow, stride 0.
  Tensor squeeze() const;
  Tensor squeeze(int64_t axis) const;
  Tensor unsqueeze(int64_t axis) const;
  Tensor as_strided(Shape shape, Strides strides, int64_t offset) const;

  // Copies.
  Tensor contiguous() const;  // Returns *this when already contiguous.
  Tensor clone() const;
  Tensor cast(DType dtype) const;  // Returns *this when the dtype matches.
  Tensor to(Backend& backend) const;

  // Host values (row-major), converted to T when the dtype differs.
  template <class T>
  std::vector<T> to_vector() const;
  template <class T>
  T item() const;  // The one element of a tensor of size 1.

  // Per-handle state of a wrapping backend (the autodiff tape node).
  const std::shared_ptr<TensorExtra>& extra() const { return impl().extra; }
  void set_extra(std::shared_ptr<TensorExtra> extra);

 private:
  struct Impl {
    Shape shape;
    Strides strides;
    int64_t offset = 0;
    int64_t numel = 0;
    DType dtype = DType::f32;
    Backend* backend = nullptr;
    std::shared_ptr<BackendData> data;
    std::shared_ptr<TensorExtra> extra;
  };
  explicit Tensor(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  const Impl& impl() const;
  std::vector<std::byte> host_bytes() const;  // Contiguous, this dtype.

  std::shared_ptr<Impl> impl_;
};

template <class T>
std::vector<T> Tensor::to_vector() const {
  const Tensor t = cast(dtype_of<T>);
  std::vector<std::byte> bytes = t.host_bytes();
  std::vector<T> out(size_t(t.numel()));
  if constexpr (std::is_same_v<T, bool>) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = bytes[i] != std::byte{0};
  } else if (!out.empty()) {
    std::memcpy(out.data(), bytes.data(), bytes.size());
  }
  return out;
}

template <class T>
T Tensor::item() const {
  if (numel() != 1) {
    throw ShapeError("item: expected a tensor of one element, got " +
                     to_string());
  }
  return to_vector<T>()[0];
}

}  // namespace nascent
