// The decorator's storage side (everything delegates to the wrapped
// backend, around our Storage) and the ops that only write: create, random
// and copy (cast, contiguous, and the writes into views behind cat, pad and
// assign).
#include <fmt/format.h>

#include "nascent/autodiff/graph.h"

namespace nascent::autodiff {

using detail::Edge;
using detail::to_inner;

Backend::Backend(nascent::Backend& inner) : inner_(inner) {}

std::string Backend::name() const {
  return "autodiff(" + inner_.name() + ")";
}

std::shared_ptr<BackendData> Backend::allocate(size_t nbytes) {
  return std::make_shared<detail::Storage>(inner_.allocate(nbytes), nbytes);
}

std::shared_ptr<BackendData> Backend::upload(const void* host, size_t nbytes) {
  return std::make_shared<detail::Storage>(inner_.upload(host, nbytes), nbytes);
}

std::shared_ptr<BackendData> Backend::wrap(std::shared_ptr<const void> owner,
                                           const void* data, size_t nbytes) {
  return std::make_shared<detail::Storage>(
      inner_.wrap(std::move(owner), data, nbytes), nbytes);
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
  return to_inner(t);
}

HostBytes Backend::materialize(const Tensor& t) {
  return inner_.materialize(to_inner(t));
}

void Backend::set_persistent(const Tensor& t, bool persistent) {
  inner_.set_persistent(to_inner(t), persistent);
}

bool Backend::is_persistent(const Tensor& t) const {
  return inner_.is_persistent(to_inner(t));
}

void Backend::trim() {
  inner_.trim();
}

MemoryStats Backend::memory_stats() const {
  return inner_.memory_stats();
}

void Backend::create(CreationOp op, Scalar a, Scalar b, Tensor& out) {
  detail::begin_write(out, false);
  Tensor o = to_inner(out);
  inner_.create(op, a, b, o);
  detail::end_write(out, nullptr);
}

void Backend::random(RandomOp op, const RandomParams& p, Tensor& out) {
  detail::begin_write(out, false);
  Tensor o = to_inner(out);
  inner_.random(op, p, o);
  detail::end_write(out, nullptr);
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

// An optimizer step writes new values into the parameter and its state: a
// plain data update (like assign under NoGradGuard), so nothing is recorded,
// but the writes still count (versions, saved copies) as any other.
void Backend::optim(OptimOp op, const OptimParams& p, Tensor& param,
                    const Tensor& grad, Tensor* state0, Tensor* state1) {
  std::vector<Tensor*> written = {&param};
  if (state0) written.push_back(state0);
  if (state1) written.push_back(state1);
  for (Tensor* t : written) detail::begin_write(*t, false);
  Tensor pi = to_inner(param);
  Tensor s0 = state0 ? to_inner(*state0) : Tensor();
  Tensor s1 = state1 ? to_inner(*state1) : Tensor();
  inner_.optim(op, p, pi, to_inner(grad), state0 ? &s0 : nullptr,
               state1 ? &s1 : nullptr);
  for (Tensor* t : written) detail::end_write(*t, nullptr);
}

}  // namespace nascent::autodiff
