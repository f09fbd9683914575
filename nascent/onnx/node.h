// Internal to nascent/onnx: how an operator is mapped. At load, an op's
// factory reads and checks the node's attributes (Node) and returns the
// kernel that runs it on input tensors; the registry maps op types to
// factories (ops_*.cpp each register a family).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "nascent/core/ops.h"
#include "nascent/onnx/model.h"

namespace nascent::onnx {

// A node being prepared: its attributes, typed and checked.
class Node {
 public:
  // `constants`: per input, its value where it is known at load (an
  // initializer or a folded node), else undefined.
  Node(const NodeProto& proto, std::string where, int64_t opset,
       Backend& backend, const std::string& base_dir,
       std::vector<Tensor> constants = {});

  const NodeProto& proto() const { return proto_; }
  const std::string& where() const { return where_; }  // "node 'x' (Conv)"
  int64_t opset() const { return opset_; }
  Backend& backend() const { return backend_; }
  size_t input_count() const { return proto_.inputs.size(); }
  size_t output_count() const { return proto_.outputs.size(); }

  bool has(const std::string& name) const { return find(name) != nullptr; }
  int64_t i(const std::string& name, int64_t fallback) const;
  float f(const std::string& name, float fallback) const;
  std::string s(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> ints(const std::string& name,
                            std::vector<int64_t> fallback = {}) const;
  std::vector<float> floats(const std::string& name) const;
  std::vector<std::string> strings(const std::string& name) const;
  Tensor t(const std::string& name) const;  // Undefined if absent.
  // Input i's value if it is known at load, so a kernel can prepare it
  // once (a transposed weight, checked indices); undefined otherwise.
  Tensor constant(size_t i) const;
  // An attribute that must be present.
  int64_t required_i(const std::string& name) const;

  [[noreturn]] void fail(const std::string& msg) const;         // ValueError
  [[noreturn]] void unsupported(const std::string& msg) const;  // Unsupported

 private:
  const AttributeProto* find(const std::string& name) const;
  const AttributeProto& typed(const std::string& name, AttrType type) const;

  const NodeProto& proto_;
  std::string where_;
  int64_t opset_;
  Backend& backend_;
  const std::string& base_dir_;
  std::vector<Tensor> constants_;
};

// Missing optional inputs are undefined tensors; returns the outputs (an
// output the node does not use may be left undefined).
using Kernel = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
using Factory = std::function<Kernel(const Node&)>;

struct OpDef {
  Factory factory;
  int min_inputs = 1, max_inputs = 1;  // -1: variadic.
  int64_t since = 13;                  // Lowest default-domain opset.
};
using Registry = std::map<std::string, OpDef>;
const Registry& registry();

void register_elementwise(Registry& r);  // ops_elementwise.cpp
void register_nn(Registry& r);           // ops_nn.cpp
void register_pool(Registry& r);         // ops_pool.cpp
void register_shape(Registry& r);        // ops_shape.cpp
void register_reduce(Registry& r);       // ops_reduce.cpp
void register_resize(Registry& r);       // ops_resize.cpp
void register_scatter(Registry& r);      // ops_scatter.cpp
void register_rnn(Registry& r);          // ops_rnn.cpp
void register_loss(Registry& r);         // ops_loss.cpp

// Ops that create a tensor whose size the graph's data gives
// (ConstantOfShape, Expand, Tile, Range, OneHot, Pad, Resize) call this
// first, so that no file makes nascent allocate without bound: at run, past
// 2^31 elements it raises ValueError; while constants fold at load, past a
// bound tied to the file's size it raises FoldTooLarge and the loader
// leaves the node to run time (model.cpp).
void check_created(double numel, const std::string& what);
class FoldTooLarge : public ValueError {
 public:
  using ValueError::ValueError;
};
// Sets the fold bound (elements) for this thread while it lives.
class FoldScope {
 public:
  explicit FoldScope(double limit);
  ~FoldScope();
  FoldScope(const FoldScope&) = delete;
  FoldScope& operator=(const FoldScope&) = delete;

 private:
  double previous_;
};
double numel_of(const std::vector<int64_t>& dims);  // As a double: no overflow.

// Helpers for kernels.
std::vector<int64_t> host_ints(const Tensor& t);  // Any integer tensor.
double host_double(const Tensor& t);              // One element.
int64_t axis_of(int64_t axis, int64_t rank, const char* op);

}  // namespace nascent::onnx
