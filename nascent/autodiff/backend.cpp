// The decorator's storage side (the wrapped backend's storage inside our
// Storage), the write protocol of the ops it forwards unrecorded, and copy
// (cast, contiguous, and the writes into views behind cat, pad and assign).
#include <fmt/format.h>

#include "nascent/autodiff/graph.h"

namespace nascent::autodiff {

using detail::Edge;

Backend::Backend(nascent::Backend& inner) : ForwardingBackend(inner) {}

std::string Backend::name() const {
  return "autodiff(" + inner_.name() + ")";
}

Tensor Backend::to_inner(const Tensor& t) const {
  return detail::to_inner(t);
}

std::shared_ptr<BackendData> Backend::wrap_storage(
    std::shared_ptr<BackendData> inner, size_t nbytes) {
  return std::make_shared<detail::Storage>(std::move(inner), nbytes);
}

// Ops forwarded unrecorded (creation, random, quant, an optimizer step) are
// plain writes: nothing enters the tape, but the writes still count
// (versions, saved copies moved out first) as any other, like assign under
// NoGradGuard.
void Backend::before(Op op, std::span<const Tensor* const> inputs,
                     std::span<Tensor* const> written) {
  for (Tensor* t : written) {
    if (t != nullptr) detail::begin_write(*t, false);
  }
}

void Backend::after(Op op, std::span<Tensor* const> written) {
  for (Tensor* t : written) {
    if (t != nullptr) detail::end_write(*t, nullptr);
  }
}

Tensor Backend::adopt(const Tensor& t) {
  if (&t.backend() != &inner_) {
    throw BackendError(fmt::format(
        "adopt: {} lives on backend {}, not on {} (the wrapped backend)",
        t.to_string(), t.backend().name(), inner_.name()));
  }
  return Tensor::make(t.shape(), t.strides(), t.offset(), t.dtype(), *this,
                      std::make_shared<detail::Storage>(t.data()));
}

Tensor Backend::unwrap(const Tensor& t) const {
  if (&t.backend() != this) {
    throw BackendError(fmt::format("unwrap: {} lives on backend {}, not on {}",
                                   t.to_string(), t.backend().name(), name()));
  }
  return detail::to_inner(t);
}

namespace {

// dst = src converted to dst's dtype: the gradient converts back.
class CopyNode final : public detail::Node {
 public:
  CopyNode(std::vector<Edge> next, const Tensor& dst, DType src_dtype)
      : Node("copy", std::move(next), dst), src_dtype_(src_dtype) {}
  std::vector<Tensor> apply(const Tensor& grad) override {
    return {grad.cast(src_dtype_)};
  }

 private:
  DType src_dtype_;
};

}  // namespace

void Backend::copy(const Tensor& src, Tensor& dst) {
  detail::Recording r = detail::record({&src}, dst.dtype());
  Edge node;
  if (r.active) node = std::make_shared<CopyNode>(r.edges, dst, src.dtype());
  detail::begin_write(dst, node != nullptr);
  Tensor d = to_inner(dst);
  inner_.copy(to_inner(src), d);
  detail::end_write(dst, node);
}

}  // namespace nascent::autodiff
