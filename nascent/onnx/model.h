// ONNX import: an exported model runs as nascent ops on any backend.
//
//   onnx::Model m = onnx::load("model.onnx", backend);
//   std::vector<Tensor> ys = m.run({x});
//
// load() decodes the file (proto.h), checks the graph once (each operator
// at an opset whose semantics nascent implements: 13 and newer, earlier
// for operators unchanged since; topological order, every input defined,
// initializer dtypes and sizes, each node's attributes), uploads the
// initializers to the backend once and evaluates the nodes whose inputs are all
// constant. run() checks the inputs against the declared dtypes and static dims
// and evaluates the remaining nodes in order, dropping each value after its
// last use. Only core ops are used, so every backend runs a model.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nascent/core/error.h"
#include "nascent/core/tensor.h"
#include "nascent/onnx/proto.h"

namespace nascent::onnx {

// A valid model that uses what nascent does not have: an operator (its
// message names the operator, domain and opset), a dtype, a feature.
class UnsupportedError : public Error {
 public:
  using Error::Error;
};

struct ValueSpec {
  std::string name;
  DType dtype = DType::f32;
  bool has_shape = false;
  std::vector<Dim> dims;  // value -1: unknown or named (param).
};
std::string to_string(const ValueSpec& v);  // "input f32[N, 1, 28, 28]"

class Graph;  // The checked, prepared nodes (model.cpp).

class Model {
 public:
  // Graph inputs without an initializer, and the graph outputs.
  const std::vector<ValueSpec>& inputs() const { return inputs_; }
  const std::vector<ValueSpec>& outputs() const { return outputs_; }
  int64_t opset() const { return opset_; }  // Default domain; -1: none.
  size_t node_count() const;                // After constant folding.

  // One tensor per input, in inputs() order, on the model's backend (others
  // are copied); returns one per output.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;

 private:
  friend Model load_bytes(std::span<const std::byte>, const std::string&,
                          const std::string&, Backend&);
  std::vector<ValueSpec> inputs_, outputs_;
  int64_t opset_ = 0;
  std::shared_ptr<const Graph> graph_;
};

// Reads `path`; external data files are resolved in its folder.
Model load(const std::string& path, Backend& backend);
// From bytes in memory; `what` names them in errors, external data is
// looked up under `base_dir` (empty: external data is refused).
Model load_bytes(std::span<const std::byte> bytes, const std::string& what,
                 const std::string& base_dir, Backend& backend);

// What `nascent onnx info` prints, without preparing the graph: a model
// with unsupported operators is described, not refused.
struct OpCount {
  std::string op_type, domain;
  int64_t opset = 0;
  size_t count = 0;
  bool supported = false;
};
struct Summary {
  int64_t ir_version = 0;
  std::vector<OpsetId> opset_imports;
  std::string producer;
  std::vector<ValueSpec> inputs, outputs;  // dtype f32 where unsupported.
  std::vector<std::string> input_types, output_types;  // ONNX type names.
  size_t initializer_count = 0;
  int64_t parameter_count = 0;
  std::vector<OpCount> ops;  // Sorted by op type.
};
Summary inspect(const std::string& path);

// Whether nascent maps this operator (default domain), at this opset.
bool is_supported(const std::string& op_type, const std::string& domain,
                  int64_t opset);

// The host values of an ONNX tensor as a nascent tensor on `backend`
// (external data resolved under base_dir). `where` names it in errors.
Tensor to_tensor(const TensorProto& t, Backend& backend,
                 const std::string& base_dir, const std::string& where);
// Supported dtypes; UnsupportedError names the others.
DType to_dtype(int32_t elem_type, const std::string& where);
int32_t to_elem_type(DType dtype);

}  // namespace nascent::onnx
