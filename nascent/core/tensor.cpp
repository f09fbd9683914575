#include "nascent/core/tensor.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace nascent {

namespace {

// The element range [lowest, highest] a view touches, relative to storage;
// nullopt when computing it overflows int64 (such a view reaches outside
// any storage).
std::optional<std::pair<int64_t, int64_t>> extent(const Shape& shape,
                                                  const Strides& strides,
                                                  int64_t offset) {
  int64_t lo = offset, hi = offset;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return std::pair{offset, offset - 1};
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t n = shape[i] - 1, s = strides[i];  // n >= 0.
    if (n != 0 && (s > INT64_MAX / n || s < INT64_MIN / n)) return std::nullopt;
    const int64_t span = n * s;
    if (span < 0 ? lo < INT64_MIN - span : hi > INT64_MAX - span) {
      return std::nullopt;
    }
    (span < 0 ? lo : hi) += span;
  }
  return std::pair{lo, hi};
}

}  // namespace

Tensor Tensor::make(Shape shape, Strides strides, int64_t offset, DType dtype,
                    Backend& backend, std::shared_ptr<BackendData> data) {
  int64_t n = checked_numel(shape, "Tensor::make");
  if (strides.size() != shape.size()) {
    throw ShapeError(fmt::format("Tensor::make: {} strides for shape {}",
                                 strides.size(), nascent::to_string(shape)));
  }
  if (!data) throw BackendError("Tensor::make: no storage given");
  auto range = extent(shape, strides, offset);
  auto [lo, hi] = range.value_or(std::pair{int64_t(-1), int64_t(-1)});
  int64_t capacity = int64_t(data->nbytes() / size_of(dtype));
  if (n > 0 && !range) {
    throw ShapeError(fmt::format(
        "Tensor::make: view {} with strides [{}] and offset {} reaches "
        "elements beyond int64",
        nascent::to_string(shape), fmt::join(strides, ", "), offset));
  }
  if (n > 0 && (lo < 0 || hi >= capacity)) {
    throw ShapeError(fmt::format(
        "Tensor::make: view {} with strides [{}] and offset {} reaches "
        "elements [{}, {}] of a storage of {} {} elements",
        nascent::to_string(shape), fmt::join(strides, ", "), offset, lo, hi,
        capacity, name(dtype)));
  }
  auto impl = std::make_shared<Impl>();
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->numel = n;
  impl->dtype = dtype;
  impl->backend = &backend;
  impl->data = std::move(data);
  return Tensor(std::move(impl));
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Backend& backend) {
  int64_t n = checked_numel(shape, "empty");
  if (uint64_t(n) > uint64_t(INT64_MAX) / size_of(dtype)) {
    throw ValueError(fmt::format("empty: shape {} of {} is too large",
                                 nascent::to_string(shape), name(dtype)));
  }
  auto data = backend.allocate(size_t(n) * size_of(dtype));
  return make(shape, contiguous_strides(shape), 0, dtype, backend,
              std::move(data));
}

const Tensor::Impl& Tensor::impl() const {
  if (!impl_) throw ValueError("use of an undefined (empty) Tensor handle");
  return *impl_;
}

int64_t Tensor::shape(int64_t axis) const {
  // normalize_axis lets axis 0 through for a 0-d tensor; it has no size.
  if (ndim() == 0) {
    throw ValueError(fmt::format("shape: a 0-d tensor has no axis {}", axis));
  }
  return impl().shape[size_t(normalize_axis(axis, ndim(), "shape"))];
}

bool Tensor::is_contiguous() const {
  const Impl& i = impl();
  int64_t expected = 1;
  for (size_t d = i.shape.size(); d-- > 0;) {
    if (i.shape[d] == 1) continue;
    if (i.strides[d] != expected) return i.numel == 0;
    expected *= i.shape[d];
  }
  return true;
}

bool Tensor::same_view(const Tensor& other) const {
  return data() == other.data() && offset() == other.offset() &&
         shape() == other.shape() && strides() == other.strides() &&
         dtype() == other.dtype();
}

std::string Tensor::to_string() const {
  if (!impl_) return "undefined";
  return fmt::format("{}{}", name(dtype()), nascent::to_string(shape()));
}

void Tensor::set_extra(std::shared_ptr<TensorExtra> extra) {
  if (!impl_) throw ValueError("set_extra: undefined Tensor");
  // Handles are shared: give this one its own Impl so others keep theirs.
  auto copy = std::make_shared<Impl>(*impl_);
  copy->extra = std::move(extra);
  impl_ = std::move(copy);
}

// --- Views -----------------------------------------------------------------

Tensor Tensor::as_strided(Shape shape, Strides strides, int64_t offset) const {
  Tensor t = make(std::move(shape), std::move(strides), offset, dtype(),
                  backend(), data());
  t.impl_->extra = impl().extra;
  return t;
}

namespace {

// Infers one -1 in a reshape target; checks the element count.
Shape infer_shape(Shape shape, int64_t numel, const Shape& from) {
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) {
        throw ShapeError(
            fmt::format("reshape: more than one -1 in {}", to_string(shape)));
      }
      infer = int(i);
    } else if (shape[i] < 0) {
      throw ShapeError(
          fmt::format("reshape: negative size in {}", to_string(shape)));
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0) {
      throw ShapeError(fmt::format("reshape: cannot reshape {} into {}",
                                   to_string(from), to_string(shape)));
    }
    shape[size_t(infer)] = numel / known;
  }
  if (checked_numel(shape, "reshape") != numel) {
    throw ShapeError(
        fmt::format("reshape: cannot reshape {} ({} elements) into {}",
                    to_string(from), numel, to_string(shape)));
  }
  return shape;
}

// Strides for viewing (shape, strides) as new_shape without a copy, if the
// old axes merge or split cleanly (PyTorch's computeStride); empty if not.
bool view_strides(const Shape& shape, const Strides& strides,
                  const Shape& new_shape, Strides& out) {
  out.assign(new_shape.size(), 0);
  if (shape.empty()) {
    // A 0-d tensor has no axes to walk; any all-ones shape views it.
    out.assign(new_shape.size(), 1);
    return true;
  }
  if (numel(shape) == 0) {
    out = contiguous_strides(new_shape);
    return true;
  }
  int64_t view_d = int64_t(new_shape.size()) - 1;
  int64_t chunk_base = strides.empty() ? 1 : strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= shape[size_t(d)];
    if (d == 0 || (shape[size_t(d - 1)] != 1 &&
                   strides[size_t(d - 1)] != tensor_numel * chunk_base)) {
      while (view_d >= 0 &&
             (view_numel < tensor_numel || new_shape[size_t(view_d)] == 1)) {
        out[size_t(view_d)] = view_numel * chunk_base;
        view_numel *= new_shape[size_t(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base = strides[size_t(d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

}  // namespace

Tensor Tensor::view(Shape new_shape) const {
  new_shape = infer_shape(std::move(new_shape), numel(), shape());
  Strides s;
  if (!view_strides(shape(), strides(), new_shape, s)) {
    throw ShapeError(fmt::format(
        "view: cannot view {} with strides [{}] as {} without a copy; use "
        "reshape",
        to_string(), fmt::join(strides(), ", "),
        nascent::to_string(new_shape)));
  }
  return as_strided(std::move(new_shape), std::move(s), offset());
}

Tensor Tensor::reshape(Shape new_shape) const {
  new_shape = infer_shape(std::move(new_shape), numel(), shape());
  Strides s;
  if (view_strides(shape(), strides(), new_shape, s)) {
    return as_strided(std::move(new_shape), std::move(s), offset());
  }
  return contiguous().view(std::move(new_shape));
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (ndim() == 0) return reshape({1});
  int s = normalize_axis(start, ndim(), "flatten");
  int e = normalize_axis(end, ndim(), "flatten");
  if (s > e) {
    throw ValueError(
        fmt::format("flatten: start axis {} comes after end axis {} for {}",
                    start, end, to_string()));
  }
  Shape out(shape().begin(), shape().begin() + s);
  int64_t merged = 1;
  for (int i = s; i <= e; ++i) merged *= shape()[size_t(i)];
  out.push_back(merged);
  out.insert(out.end(), shape().begin() + e + 1, shape().end());
  return reshape(std::move(out));
}

Tensor Tensor::permute(const std::vector<int64_t>& axes) const {
  if (int(axes.size()) != ndim()) {
    throw ShapeError(
        fmt::format("permute: {} axes given for {}", axes.size(), to_string()));
  }
  Shape s(axes.size());
  Strides st(axes.size());
  std::vector<bool> seen(axes.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int a = normalize_axis(axes[i], ndim(), "permute");
    if (seen[size_t(a)]) {
      throw ValueError(fmt::format("permute: axis {} repeated in [{}]", axes[i],
                                   fmt::join(axes, ", ")));
    }
    seen[size_t(a)] = true;
    s[i] = shape()[size_t(a)];
    st[i] = strides()[size_t(a)];
  }
  return as_strided(std::move(s), std::move(st), offset());
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  if (ndim() < 2) {
    // Nothing to swap, but the axes must still make sense; the defaults
    // (-2, -1) are allowed so that transpose() of a vector is a no-op.
    normalize_axis(a, 2, "transpose");
    normalize_axis(b, 2, "transpose");
    return *this;
  }
  std::vector<int64_t> axes(static_cast<size_t>(ndim()));
  std::iota(axes.begin(), axes.end(), 0);
  std::swap(axes[size_t(normalize_axis(a, ndim(), "transpose"))],
            axes[size_t(normalize_axis(b, ndim(), "transpose"))]);
  return permute(axes);
}

Tensor Tensor::slice(int64_t axis, int64_t start, int64_t stop,
                     int64_t step) const {
  int ax = normalize_axis(axis, ndim(), "slice");
  if (ndim() == 0) throw ShapeError("slice: cannot slice a 0-d tensor");
  if (step <= 0) {
    throw ValueError(fmt::format("slice: step must be positive, got {}", step));
  }
  int64_t n = shape()[size_t(ax)];
  auto clampi = [n](int64_t i) {
    if (i < 0) i += n;
    return std::clamp<int64_t>(i, 0, n);
  };
  int64_t b = clampi(start), e = clampi(stop);
  int64_t len = e > b ? (e - b + step - 1) / step : 0;
  Shape s = shape();
  Strides st = strides();
  s[size_t(ax)] = len;
  st[size_t(ax)] *= step;
  return as_strided(std::move(s), std::move(st),
                    offset() + (len > 0 ? b * strides()[size_t(ax)] : 0));
}

Tensor Tensor::narrow(int64_t axis, int64_t start, int64_t length) const {
  int ax = normalize_axis(axis, ndim(), "narrow");
  int64_t n = ndim() == 0 ? 1 : shape()[size_t(ax)];
  if (start < 0) start += n;
  if (start < 0 || length < 0 || start + length > n) {
    throw ValueError(fmt::format(
        "narrow: range [{}, {}) is outside axis {} of size {} for {}", start,
        start + length, axis, n, to_string()));
  }
  return slice(ax, start, start + length);
}

Tensor Tensor::select(int64_t axis, int64_t index) const {
  int ax = normalize_axis(axis, ndim(), "select");
  if (ndim() == 0) throw ShapeError("select: cannot select from a 0-d tensor");
  int64_t n = shape()[size_t(ax)];
  if (index < -n || index >= n) {
    throw ValueError(fmt::format(
        "select: index {} is out of range for axis {} of size {} in {}", index,
        axis, n, to_string()));
  }
  if (index < 0) index += n;
  Shape s = shape();
  Strides st = strides();
  int64_t off = offset() + index * st[size_t(ax)];
  s.erase(s.begin() + ax);
  st.erase(st.begin() + ax);
  return as_strided(std::move(s), std::move(st), off);
}

Tensor Tensor::expand(const Shape& target) const {
  if (target.size() < shape().size()) {
    throw ShapeError(fmt::format("expand: cannot expand {} to fewer axes {}",
                                 to_string(), nascent::to_string(target)));
  }
  size_t lead = target.size() - shape().size();
  Shape s(target.size());
  Strides st(target.size(), 0);
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t want = target[i];
    if (i < lead) {
      if (want < 0) {
        throw ShapeError(fmt::format("expand: size -1 for a new axis in {}",
                                     nascent::to_string(target)));
      }
      s[i] = want;
      continue;
    }
    int64_t have = shape()[i - lead];
    if (want == -1) want = have;
    if (have == want) {
      s[i] = have;
      st[i] = strides()[i - lead];
    } else if (have == 1 && want >= 0) {
      s[i] = want;
    } else {
      throw ShapeError(
          fmt::format("expand: cannot expand {} to {} (axis {}: {} vs {})",
                      to_string(), nascent::to_string(target), i, have, want));
    }
  }
  return as_strided(std::move(s), std::move(st), offset());
}

Tensor Tensor::squeeze() const {
  Shape s;
  Strides st;
  for (size_t i = 0; i < shape().size(); ++i) {
    if (shape()[i] != 1) {
      s.push_back(shape()[i]);
      st.push_back(strides()[i]);
    }
  }
  return as_strided(std::move(s), std::move(st), offset());
}

Tensor Tensor::squeeze(int64_t axis) const {
  int ax = normalize_axis(axis, ndim(), "squeeze");
  if (ndim() == 0 || shape()[size_t(ax)] != 1) return *this;
  Shape s = shape();
  Strides st = strides();
  s.erase(s.begin() + ax);
  st.erase(st.begin() + ax);
  return as_strided(std::move(s), std::move(st), offset());
}

Tensor Tensor::unsqueeze(int64_t axis) const {
  int ax = normalize_axis(axis, ndim() + 1, "unsqueeze");
  Shape s = shape();
  Strides st = strides();
  int64_t inner = ax < ndim() ? st[size_t(ax)] * s[size_t(ax)] : 1;
  s.insert(s.begin() + ax, 1);
  st.insert(st.begin() + ax, inner);
  return as_strided(std::move(s), std::move(st), offset());
}

// --- Copies ----------------------------------------------------------------

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), dtype(), backend());
  backend().copy(*this, out);
  return out;
}

Tensor Tensor::contiguous() const {
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::cast(DType to) const {
  if (to == dtype()) return *this;
  Tensor out = empty(shape(), to, backend());
  backend().copy(*this, out);
  return out;
}

Tensor Tensor::to(Backend& target) const {
  if (&target == &backend()) return *this;
  std::vector<std::byte> bytes = host_bytes();
  auto data = target.upload(bytes.data(), bytes.size());
  return make(shape(), contiguous_strides(shape()), 0, dtype(), target,
              std::move(data));
}

std::vector<std::byte> Tensor::host_bytes() const {
  Tensor c = contiguous();
  HostBytes host = backend().materialize(c);
  size_t n = size_t(c.numel()) * c.itemsize();
  size_t start = size_t(c.offset()) * c.itemsize();
  if (n > 0 && start + n > host.size) {
    throw BackendError(fmt::format(
        "materialize: backend {} returned {} bytes for {} at offset {}",
        backend().name(), host.size, to_string(), c.offset()));
  }
  std::vector<std::byte> out(n);
  if (n > 0) std::memcpy(out.data(), host.data + start, n);
  return out;
}

// --- Backend defaults --------------------------------------------------------

void Backend::release(Tensor& t) {
  t = Tensor();
}

std::shared_ptr<BackendData> Backend::wrap(std::shared_ptr<const void> owner,
                                           const void* data, size_t nbytes) {
  return upload(data, nbytes);
}

}  // namespace nascent
