// Shape ops that copy (or return views): cat, stack, split, chunk, pad, flip,
// repeat, tril, triu. All are compositions of views with the backend's copy,
// fill and where; none needs an op of its own.
#include <algorithm>
#include <string>

#include <fmt/ranges.h>

#include "nascent/core/ops.h"
#include "nascent/core/ops/validate.h"

namespace nascent {

namespace {

// "f32[2, 3], f32[2, 4], i64[0]" for error messages.
std::string describe_all(const std::vector<Tensor>& tensors) {
  std::vector<std::string> parts;
  for (const Tensor& t : tensors) parts.push_back(t.to_string());
  return fmt::format("{}", fmt::join(parts, ", "));
}

Backend& common_backend_all(const char* op,
                            const std::vector<Tensor>& tensors) {
  if (tensors.empty()) {
    throw ValueError(fmt::format("{}: needs at least one tensor", op));
  }
  Backend& backend = detail::common_backend(op, {&tensors[0]});
  for (size_t i = 1; i < tensors.size(); ++i) {
    detail::common_backend(op, {&tensors[0], &tensors[i]});
  }
  return backend;
}

Tensor triangle(const char* op, const Tensor& x, int64_t k, bool lower) {
  Backend& backend = detail::common_backend(op, {&x});
  if (x.ndim() < 2) {
    throw ShapeError(fmt::format("{}: needs a tensor of 2 or more axes, got {}",
                                 op, x.to_string()));
  }
  // Element (i, j) of the last two axes is on diagonal j - i.
  Tensor rows = arange(x.shape(-2), backend, DType::i64).unsqueeze(-1);
  Tensor cols = arange(x.shape(-1), backend, DType::i64);
  Tensor diagonal = sub(cols, rows);
  Tensor keep = lower ? le(diagonal, k) : ge(diagonal, k);
  return where(keep, x, Scalar(0));
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t axis) {
  const char* op = "cat";
  Backend& backend = common_backend_all(op, tensors);
  DType dtype = tensors[0].dtype();
  for (const Tensor& t : tensors) dtype = promote_types(dtype, t.dtype());
  // PyTorch's legacy rule: a 1-D tensor of size 0 joins tensors of any shape
  // (it adds nothing), so a list can start from an empty tensor.
  std::vector<const Tensor*> parts;
  for (const Tensor& t : tensors) {
    if (!(t.ndim() == 1 && t.numel() == 0)) parts.push_back(&t);
  }
  if (parts.empty()) parts.push_back(&tensors[0]);
  const Tensor& first = *parts[0];
  if (first.ndim() == 0) {
    throw ShapeError(fmt::format("{}: cannot concatenate 0-d tensors ({})", op,
                                 describe_all(tensors)));
  }
  int ax = normalize_axis(axis, first.ndim(), op);
  Shape shape = first.shape();
  shape[size_t(ax)] = 0;
  for (const Tensor* t : parts) {
    if (t->ndim() != first.ndim()) {
      throw ShapeError(
          fmt::format("{}: tensors must have the same number of axes, got {}",
                      op, describe_all(tensors)));
    }
    for (int d = 0; d < first.ndim(); ++d) {
      int64_t a = first.shape()[size_t(d)], b = t->shape()[size_t(d)];
      if (d != ax && a != b) {
        throw ShapeError(fmt::format(
            "{}: shapes differ on axis {} ({} vs {}) but only axis {} may: {}",
            op, d, a, b, ax, describe_all(tensors)));
      }
    }
    shape[size_t(ax)] += t->shape()[size_t(ax)];
  }
  // One allocation; each input is copied (and converted) into its slice.
  Tensor out = detail::new_output(shape, dtype, backend);
  int64_t at = 0;
  for (const Tensor* t : parts) {
    int64_t n = t->shape()[size_t(ax)];
    if (t->numel() > 0) {
      Tensor dst = out.narrow(ax, at, n);
      backend.copy(*t, dst);
    }
    at += n;
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t axis) {
  const char* op = "stack";
  common_backend_all(op, tensors);
  for (const Tensor& t : tensors) {
    if (t.shape() != tensors[0].shape()) {
      throw ShapeError(fmt::format("{}: tensors must share one shape, got {}",
                                   op, describe_all(tensors)));
    }
  }
  int ax = normalize_axis(axis, tensors[0].ndim() + 1, op);
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const Tensor& t : tensors) parts.push_back(t.unsqueeze(ax));
  return cat(parts, ax);
}

std::vector<Tensor> split(const Tensor& x, int64_t size, int64_t axis) {
  const char* op = "split";
  detail::common_backend(op, {&x});
  if (x.ndim() == 0) {
    throw ShapeError(fmt::format("{}: cannot split a 0-d tensor", op));
  }
  int ax = normalize_axis(axis, x.ndim(), op);
  int64_t n = x.shape()[size_t(ax)];
  if (size < 0 || (size == 0 && n > 0)) {
    throw ValueError(
        fmt::format("{}: size must be positive, got {} for axis {} of {}", op,
                    size, ax, x.to_string()));
  }
  if (n == 0) return {x};  // One empty piece, as PyTorch.
  std::vector<Tensor> pieces;
  for (int64_t at = 0; at < n; at += size) {
    pieces.push_back(x.narrow(ax, at, std::min(size, n - at)));
  }
  return pieces;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes,
                          int64_t axis) {
  const char* op = "split";
  detail::common_backend(op, {&x});
  if (x.ndim() == 0) {
    throw ShapeError(fmt::format("{}: cannot split a 0-d tensor", op));
  }
  int ax = normalize_axis(axis, x.ndim(), op);
  int64_t n = x.shape()[size_t(ax)], total = 0;
  bool negative = false;
  for (int64_t s : sizes) {
    negative = negative || s < 0;
    total += s;
  }
  if (negative || total != n) {
    throw ValueError(fmt::format(
        "{}: sizes [{}] must be non-negative and add up to {} (axis {} of "
        "{})",
        op, fmt::join(sizes, ", "), n, ax, x.to_string()));
  }
  std::vector<Tensor> pieces;
  int64_t at = 0;
  for (int64_t s : sizes) {
    pieces.push_back(x.narrow(ax, at, s));
    at += s;
  }
  return pieces;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t axis) {
  const char* op = "chunk";
  detail::common_backend(op, {&x});
  if (chunks <= 0) {
    throw ValueError(
        fmt::format("{}: chunks must be positive, got {}", op, chunks));
  }
  if (x.ndim() == 0) {
    throw ShapeError(fmt::format("{}: cannot chunk a 0-d tensor", op));
  }
  int ax = normalize_axis(axis, x.ndim(), op);
  int64_t n = x.shape()[size_t(ax)];
  // PyTorch: pieces of ceil(n / chunks), so there may be fewer than
  // `chunks`; an empty axis gives `chunks` empty pieces.
  if (n == 0) return std::vector<Tensor>(size_t(chunks), x);
  return split(x, (n + chunks - 1) / chunks, ax);
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, Scalar value) {
  const char* op = "pad";
  Backend& backend = detail::common_backend(op, {&x});
  if (pads.size() % 2 != 0 || pads.size() / 2 > size_t(x.ndim())) {
    throw ValueError(fmt::format(
        "{}: pads must be (before, after) pairs for at most {} axes, got "
        "[{}] for {}",
        op, x.ndim(), fmt::join(pads, ", "), x.to_string()));
  }
  Shape shape = x.shape();
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    size_t d = size_t(x.ndim()) - 1 - i;
    shape[d] += pads[2 * i] + pads[2 * i + 1];
    if (shape[d] < 0) {
      throw ValueError(
          fmt::format("{}: pads [{}] crop axis {} of {} below zero", op,
                      fmt::join(pads, ", "), d, x.to_string()));
    }
  }
  Tensor out = full(shape, value, backend, x.dtype());
  // Negative pads crop x; positive ones shift where it lands in out.
  Tensor src = x, dst = out;
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    int64_t d = x.ndim() - 1 - int64_t(i);
    int64_t before = pads[2 * i], after = pads[2 * i + 1];
    int64_t crop = std::max<int64_t>(0, -before);
    int64_t len = x.shape(d) - crop - std::max<int64_t>(0, -after);
    if (len <= 0) return out;  // Nothing of x survives the crop.
    src = src.narrow(d, crop, len);
    dst = dst.narrow(d, std::max<int64_t>(0, before), len);
  }
  if (src.numel() > 0) backend.copy(src, dst);
  return out;
}

// Axes as given flip; an empty list flips nothing (as torch.flip and
// np.flip with axis=()), unlike reductions where it means every axis.
Tensor flip(const Tensor& x, const Axes& axes) {
  const char* op = "flip";
  detail::common_backend(op, {&x});
  Shape shape = x.shape();
  Strides strides = x.strides();
  int64_t offset = x.offset();
  std::vector<bool> seen(size_t(std::max(x.ndim(), 1)), false);
  for (int64_t a : axes) {
    int d = normalize_axis(a, x.ndim(), op);
    if (seen[size_t(d)]) {
      throw ValueError(fmt::format("{}: axis {} repeated in [{}] for {}", op, a,
                                   fmt::join(axes, ", "), x.to_string()));
    }
    seen[size_t(d)] = true;
    if (x.ndim() == 0 || shape[size_t(d)] == 0) continue;
    // Start at the last element and walk backwards.
    offset += (shape[size_t(d)] - 1) * strides[size_t(d)];
    strides[size_t(d)] = -strides[size_t(d)];
  }
  if (x.numel() == 0) return x.clone();
  return x.as_strided(std::move(shape), std::move(strides), offset).clone();
}

Tensor repeat(const Tensor& x, const std::vector<int64_t>& repeats) {
  const char* op = "repeat";
  detail::common_backend(op, {&x});
  if (repeats.size() < size_t(x.ndim())) {
    throw ValueError(
        fmt::format("{}: {} repeats given for {}; need at least one per axis",
                    op, repeats.size(), x.to_string()));
  }
  // View x as [r0, s0, r1, s1, ...] with stride 0 on each r (leading axes
  // that x lacks have s = 1), copy it once, and merge each (r, s) pair.
  size_t lead = repeats.size() - size_t(x.ndim());
  Shape view_shape, out_shape;
  Strides view_strides;
  for (size_t i = 0; i < repeats.size(); ++i) {
    if (repeats[i] < 0) {
      throw ValueError(
          fmt::format("{}: repeats must be non-negative, got [{}] for {}", op,
                      fmt::join(repeats, ", "), x.to_string()));
    }
    int64_t size = i < lead ? 1 : x.shape()[i - lead];
    int64_t stride = i < lead ? 0 : x.strides()[i - lead];
    view_shape.insert(view_shape.end(), {repeats[i], size});
    view_strides.insert(view_strides.end(), {0, stride});
    out_shape.push_back(checked_numel({repeats[i], size}, op));
  }
  checked_numel(out_shape, op);
  Tensor expanded =
      x.as_strided(std::move(view_shape), std::move(view_strides), x.offset());
  return expanded.clone().view(std::move(out_shape));
}

Tensor tril(const Tensor& x, int64_t k) {
  return triangle("tril", x, k, true);
}

Tensor triu(const Tensor& x, int64_t k) {
  return triangle("triu", x, k, false);
}

}  // namespace nascent
