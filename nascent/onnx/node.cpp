#include "nascent/onnx/node.h"

#include <fmt/format.h>

namespace nascent::onnx {

Node::Node(const NodeProto& proto, std::string where, int64_t opset,
           Backend& backend, const std::string& base_dir,
           std::vector<Tensor> constants)
    : proto_(proto),
      where_(std::move(where)),
      opset_(opset),
      backend_(backend),
      base_dir_(base_dir),
      constants_(std::move(constants)) {}

Tensor Node::constant(size_t i) const {
  return i < constants_.size() ? constants_[i] : Tensor();
}

void Node::fail(const std::string& msg) const {
  throw ValueError(fmt::format("onnx: {}: {}", where_, msg));
}

void Node::unsupported(const std::string& msg) const {
  throw UnsupportedError(fmt::format("onnx: {}: {}", where_, msg));
}

const AttributeProto* Node::find(const std::string& name) const {
  for (const auto& a : proto_.attributes) {
    if (a.name == name) {
      if (!a.ref_attr_name.empty()) {
        unsupported("attribute '" + name + "' refers to a function's");
      }
      return &a;
    }
  }
  return nullptr;
}

const AttributeProto& Node::typed(const std::string& name,
                                  AttrType type) const {
  const AttributeProto* a = find(name);
  // Old writers leave the type out; then the field that is set decides.
  if (a->type != int32_t(type) && a->type != 0) {
    throw FormatError(
        fmt::format("onnx: {}: attribute '{}' has type {}, expected type {}",
                    where_, name, a->type, int32_t(type)));
  }
  return *a;
}

int64_t Node::i(const std::string& name, int64_t fallback) const {
  return has(name) ? typed(name, AttrType::i).i : fallback;
}

int64_t Node::required_i(const std::string& name) const {
  if (!has(name)) fail("attribute '" + name + "' is required");
  return typed(name, AttrType::i).i;
}

float Node::f(const std::string& name, float fallback) const {
  return has(name) ? typed(name, AttrType::f).f : fallback;
}

std::string Node::s(const std::string& name,
                    const std::string& fallback) const {
  return has(name) ? typed(name, AttrType::s).s : fallback;
}

std::vector<int64_t> Node::ints(const std::string& name,
                                std::vector<int64_t> fallback) const {
  return has(name) ? typed(name, AttrType::ints).ints : fallback;
}

std::vector<float> Node::floats(const std::string& name) const {
  return has(name) ? typed(name, AttrType::floats).floats
                   : std::vector<float>{};
}

std::vector<std::string> Node::strings(const std::string& name) const {
  return has(name) ? typed(name, AttrType::strings).strings
                   : std::vector<std::string>{};
}

Tensor Node::t(const std::string& name) const {
  if (!has(name)) return {};
  const AttributeProto& a = typed(name, AttrType::t);
  if (!a.has_t) {
    throw FormatError(
        fmt::format("onnx: {}: attribute '{}' holds no tensor", where_, name));
  }
  return to_tensor(a.t, backend_, base_dir_,
                   fmt::format("{}: attribute '{}'", where_, name));
}

namespace {
thread_local double fold_limit = 0;  // 0: not folding.
}  // namespace

FoldScope::FoldScope(double limit) : previous_(fold_limit) {
  fold_limit = limit;
}
FoldScope::~FoldScope() {
  fold_limit = previous_;
}

double numel_of(const std::vector<int64_t>& dims) {
  double n = 1;
  for (int64_t d : dims) n *= double(d);
  return n;
}

void check_created(double numel, const std::string& what) {
  constexpr double max_created = double(int64_t(1) << 31);
  if (fold_limit > 0 && numel > fold_limit) {
    throw FoldTooLarge(fmt::format("{}: {} elements", what, numel));
  }
  if (!(numel <= max_created)) {
    throw ValueError(
        fmt::format("{}: would create {} elements, more than the {} allowed",
                    what, numel, max_created));
  }
}

std::vector<int64_t> host_ints(const Tensor& t) {
  if (is_floating(t.dtype())) {
    throw DTypeError(fmt::format(
        "onnx: expected an integer tensor (a shape, axes or indices), got {}",
        t.to_string()));
  }
  return t.to_vector<int64_t>();
}

double host_double(const Tensor& t) {
  if (t.numel() != 1) {
    throw ShapeError(
        fmt::format("onnx: expected a single value, got {}", t.to_string()));
  }
  return t.to_vector<double>()[0];
}

int64_t axis_of(int64_t axis, int64_t rank, const char* op) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) {
    throw ValueError(fmt::format("onnx {}: axis {} is out of range for rank {}",
                                 op, axis, rank));
  }
  return axis < 0 ? axis + rank : axis;
}

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    register_elementwise(reg);
    register_nn(reg);
    register_pool(reg);
    register_shape(reg);
    register_reduce(reg);
    register_resize(reg);
    register_scatter(reg);
    register_rnn(reg);
    register_loss(reg);
    return reg;
  }();
  return r;
}

}  // namespace nascent::onnx
