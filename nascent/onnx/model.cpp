#include "nascent/onnx/model.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "nascent/io/file.h"
#include "nascent/onnx/node.h"

namespace nascent::onnx {

namespace {

bool default_domain(const std::string& d) {
  return d.empty() || d == "ai.onnx";
}

std::string node_where(const NodeProto& n, size_t index) {
  return fmt::format("node {}{} ({})", index,
                     n.name.empty() ? "" : " '" + n.name + "'", n.op_type);
}

ValueSpec spec_of(const ValueInfoProto& v, const std::string& what) {
  std::string where = fmt::format("{}: graph value '{}'", what, v.name);
  if (!v.is_tensor) {
    throw UnsupportedError(
        fmt::format("onnx: {}: only tensors are supported (not sequences, "
                    "maps or optionals)",
                    where));
  }
  ValueSpec s;
  s.name = v.name;
  s.dtype = to_dtype(v.elem_type, where);
  s.has_shape = v.has_shape;
  s.dims = v.dims;
  return s;
}

// The version a model imports for `domain`, or -1.
int64_t opset_of(const ModelProto& m, const std::string& domain) {
  int64_t opset = -1;
  for (const auto& o : m.opset_imports) {
    if (o.domain == domain ||
        (default_domain(o.domain) && default_domain(domain))) {
      opset = o.version;
    }
  }
  return opset;
}

}  // namespace

std::string to_string(const ValueSpec& v) {
  std::string dims;
  if (!v.has_shape) {
    dims = "?";
  } else {
    std::vector<std::string> d;
    for (const auto& x : v.dims) {
      d.push_back(x.value >= 0 ? std::to_string(x.value)
                               : (x.param.empty() ? "?" : x.param));
    }
    dims = "[" + fmt::format("{}", fmt::join(d, ", ")) + "]";
  }
  return fmt::format("{} {}{}", v.name, name(v.dtype), dims);
}

bool is_supported(const std::string& op_type, const std::string& domain,
                  int64_t opset) {
  if (!default_domain(domain)) return false;
  auto it = registry().find(op_type);
  return it != registry().end() && opset >= it->second.since;
}

// The prepared graph: value slots, constants, and the kernels in order.
class Graph {
 public:
  struct Step {
    Kernel kernel;
    std::string where;
    std::vector<int> inputs;   // Slot, or -1 for a missing optional input.
    std::vector<int> outputs;  // Slot, or -1 for an unused output.
    std::vector<int> release;  // Slots last read by this step.
  };
  Backend* backend = nullptr;
  std::vector<Tensor> constants;  // One per slot; undefined if not constant.
  std::vector<int> input_slots, output_slots;
  std::vector<Step> steps;
};

size_t Model::node_count() const {
  return graph_->steps.size();
}

namespace {

// Rethrows a kernel's error with the node's name in front, keeping its type.
[[noreturn]] void rethrow_at(const std::string& where) {
  try {
    throw;
  } catch (const UnsupportedError&) {
    throw;
  } catch (const ShapeError& e) {
    throw ShapeError(fmt::format("onnx: {}: {}", where, e.what()));
  } catch (const DTypeError& e) {
    throw DTypeError(fmt::format("onnx: {}: {}", where, e.what()));
  } catch (const FormatError& e) {
    throw;
  } catch (const ValueError& e) {
    throw ValueError(fmt::format("onnx: {}: {}", where, e.what()));
  } catch (const OutOfMemory&) {
    throw;
  } catch (const Error& e) {
    throw Error(fmt::format("onnx: {}: {}", where, e.what()));
  }
}

std::vector<Tensor> run_step(const Graph::Step& s,
                             const std::vector<Tensor>& slots) {
  std::vector<Tensor> in;
  in.reserve(s.inputs.size());
  for (int i : s.inputs) in.push_back(i < 0 ? Tensor() : slots[size_t(i)]);
  try {
    return s.kernel(in);
  } catch (const FoldTooLarge&) {
    throw;  // The loader's signal, not an error.
  } catch (const Error&) {
    rethrow_at(s.where);
  }
}

void store(const Graph::Step& s, std::vector<Tensor> out,
           std::vector<Tensor>& slots) {
  for (size_t k = 0; k < s.outputs.size(); ++k) {
    if (s.outputs[k] < 0) continue;
    if (k >= out.size() || !out[k].defined()) {
      throw ValueError(
          fmt::format("onnx: {}: output {} was not produced", s.where, k));
    }
    slots[size_t(s.outputs[k])] = std::move(out[k]);
  }
}

}  // namespace

Model load_bytes(std::span<const std::byte> bytes, const std::string& what,
                 const std::string& base_dir, Backend& backend) {
  const ModelProto m = parse_model(bytes, what);
  Model model;
  model.opset_ = opset_of(m, "");
  if (m.function_count > 0) {
    throw UnsupportedError(
        fmt::format("onnx: {}: model-local functions are not supported", what));
  }
  const GraphProto& g = m.graph;
  if (g.sparse_initializer_count > 0) {
    throw UnsupportedError(
        fmt::format("onnx: {}: sparse initializers are not supported", what));
  }
  auto graph = std::make_shared<Graph>();
  graph->backend = &backend;
  std::unordered_map<std::string, int> slot_of;
  auto new_slot = [&](const std::string& name, const std::string& where) {
    if (name.empty()) {
      throw FormatError(
          fmt::format("onnx: {}: {}: empty value name", what, where));
    }
    if (!slot_of.emplace(name, int(graph->constants.size())).second) {
      throw FormatError(fmt::format("onnx: {}: {}: value '{}' is defined twice",
                                    what, where, name));
    }
    graph->constants.emplace_back();
    return int(graph->constants.size()) - 1;
  };

  for (size_t k = 0; k < g.initializers.size(); ++k) {
    const TensorProto& t = g.initializers[k];
    std::string where = fmt::format("{}: initializer {} '{}'", what, k, t.name);
    int slot = new_slot(t.name, fmt::format("initializer {}", k));
    graph->constants[size_t(slot)] = to_tensor(t, backend, base_dir, where);
    backend.set_persistent(graph->constants[size_t(slot)], true);
  }
  for (const auto& v : g.inputs) {
    if (slot_of.count(v.name)) continue;  // An initializer's default.
    model.inputs_.push_back(spec_of(v, what));
    graph->input_slots.push_back(new_slot(v.name, "graph input"));
  }

  // Nodes in order: each input must be defined above it.
  std::vector<int> last_use(graph->constants.size(), -1);
  const Registry& reg = registry();
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const NodeProto& n = g.nodes[k];
    const std::string where = node_where(n, k);
    if (!default_domain(n.domain)) {
      throw UnsupportedError(fmt::format(
          "onnx: {}: {}: operator {} (domain {}, opset {}) is not supported",
          what, where, n.op_type, n.domain, opset_of(m, n.domain)));
    }
    if (model.opset_ < 0) {
      throw FormatError(fmt::format(
          "onnx: {}: {}: the model imports no opset of the default domain",
          what, where));
    }
    auto it = reg.find(n.op_type);
    if (it == reg.end()) {
      throw UnsupportedError(fmt::format(
          "onnx: {}: {}: operator {} (domain ai.onnx, opset {}) is not "
          "supported",
          what, where, n.op_type, model.opset_));
    }
    if (model.opset_ < it->second.since) {
      throw UnsupportedError(fmt::format(
          "onnx: {}: {}: operator {} (domain ai.onnx, opset {}) is not "
          "supported before opset {} (re-export with a newer opset)",
          what, where, n.op_type, model.opset_, it->second.since));
    }
    const OpDef& def = it->second;
    int n_in = int(n.inputs.size());
    while (n_in > 0 && n.inputs[size_t(n_in) - 1].empty()) --n_in;
    if (n_in < def.min_inputs ||
        (def.max_inputs >= 0 && n_in > def.max_inputs)) {
      throw FormatError(
          fmt::format("onnx: {}: {}: {} inputs, the operator takes {} to {}",
                      what, where, n_in, def.min_inputs,
                      def.max_inputs < 0 ? std::string("any")
                                         : std::to_string(def.max_inputs)));
    }
    Graph::Step step;
    step.where = where;
    for (int i = 0; i < n_in; ++i) {
      const std::string& name = n.inputs[size_t(i)];
      if (name.empty()) {
        step.inputs.push_back(-1);
        continue;
      }
      auto s = slot_of.find(name);
      if (s == slot_of.end()) {
        throw FormatError(fmt::format(
            "onnx: {}: {}: input '{}' is not defined by an earlier node, an "
            "initializer or a graph input",
            what, where, name));
      }
      step.inputs.push_back(s->second);
      last_use[size_t(s->second)] = int(k);
    }
    try {
      std::vector<Tensor> known;
      for (int i : step.inputs) {
        known.push_back(i < 0 ? Tensor() : graph->constants[size_t(i)]);
      }
      Node node(n, what + ": " + where, model.opset_, backend, base_dir,
                std::move(known));
      step.kernel = def.factory(node);
    } catch (const UnsupportedError&) {
      throw;
    } catch (const FormatError&) {
      throw;
    } catch (const Error& e) {  // Attributes out of range: the file's fault.
      throw FormatError(e.what());
    }
    for (const std::string& name : n.outputs) {
      if (name.empty()) {
        step.outputs.push_back(-1);
        continue;
      }
      step.outputs.push_back(new_slot(name, where));
      last_use.push_back(-1);
    }
    // Constant folding: a node of constants runs once, here.
    bool constant = true;
    for (int i : step.inputs) {
      constant = constant && (i < 0 || graph->constants[size_t(i)].defined());
    }
    if (constant) {
      // What a fold may create is bounded by the file's size; a node over
      // the bound runs at run time instead (check_created).
      std::vector<Tensor> out;
      try {
        FoldScope scope(std::max(double(1 << 24), 4.0 * double(bytes.size())));
        out = run_step(step, graph->constants);
      } catch (const FoldTooLarge&) {
        graph->steps.push_back(std::move(step));
        continue;
      }
      store(step, std::move(out), graph->constants);
      for (int o : step.outputs) {
        if (o >= 0) backend.set_persistent(graph->constants[size_t(o)], true);
      }
      continue;
    }
    graph->steps.push_back(std::move(step));
  }
  for (const auto& v : g.outputs) {
    auto s = slot_of.find(v.name);
    if (s == slot_of.end()) {
      throw FormatError(fmt::format(
          "onnx: {}: graph output '{}' is not produced by the graph", what,
          v.name));
    }
    model.outputs_.push_back(spec_of(v, what));
    graph->output_slots.push_back(s->second);
  }
  // Values die after their last reader; outputs and constants live on.
  std::set<int> keep(graph->output_slots.begin(), graph->output_slots.end());
  std::vector<int> last_step(graph->constants.size(), -1);
  for (size_t k = 0; k < graph->steps.size(); ++k) {
    for (int i : graph->steps[k].inputs) {
      if (i >= 0) last_step[size_t(i)] = int(k);
    }
  }
  for (size_t slot = 0; slot < last_step.size(); ++slot) {
    if (last_step[slot] >= 0 && !keep.count(int(slot)) &&
        !graph->constants[slot].defined()) {
      graph->steps[size_t(last_step[slot])].release.push_back(int(slot));
    }
  }
  model.graph_ = std::move(graph);
  return model;
}

Model load(const std::string& path, Backend& backend) {
  auto file = io::MappedFile::open(path);
  std::string dir = std::filesystem::path(path).parent_path().string();
  return load_bytes(file->bytes(), path, dir.empty() ? "." : dir, backend);
}

std::vector<Tensor> Model::run(const std::vector<Tensor>& inputs) const {
  const Graph& g = *graph_;
  if (inputs.size() != inputs_.size()) {
    throw ValueError(fmt::format("onnx: run: the model takes {} inputs, got {}",
                                 inputs_.size(), inputs.size()));
  }
  std::vector<Tensor> slots = g.constants;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const ValueSpec& spec = inputs_[k];
    Tensor x = inputs[k];
    if (!x.defined()) {
      throw ValueError(
          fmt::format("onnx: run: input '{}' is undefined", spec.name));
    }
    if (x.dtype() != spec.dtype) {
      throw DTypeError(fmt::format("onnx: run: input {} expects {}, got {}", k,
                                   to_string(spec), x.to_string()));
    }
    bool fits = !spec.has_shape || spec.dims.size() == size_t(x.ndim());
    for (size_t d = 0; fits && spec.has_shape && d < spec.dims.size(); ++d) {
      fits = spec.dims[d].value < 0 || spec.dims[d].value == x.shape()[d];
    }
    if (!fits) {
      throw ShapeError(fmt::format("onnx: run: input {} expects {}, got {}", k,
                                   to_string(spec), x.to_string()));
    }
    if (&x.backend() != g.backend) x = x.to(*g.backend);
    slots[size_t(g.input_slots[k])] = std::move(x);
  }
  for (const auto& s : g.steps) {
    store(s, run_step(s, slots), slots);
    for (int r : s.release) slots[size_t(r)] = Tensor();
  }
  std::vector<Tensor> out;
  for (int s : g.output_slots) out.push_back(slots[size_t(s)]);
  return out;
}

Summary inspect(const std::string& path) {
  auto file = io::MappedFile::open(path);
  const ModelProto m = parse_model(file->bytes(), path);
  Summary s;
  s.ir_version = m.ir_version;
  s.opset_imports = m.opset_imports;
  s.producer = m.producer_name +
               (m.producer_version.empty() ? "" : " " + m.producer_version);
  int64_t opset = 0;
  for (const auto& o : m.opset_imports) {
    if (default_domain(o.domain)) opset = o.version;
  }
  std::set<std::string> init;
  for (const auto& t : m.graph.initializers) {
    init.insert(t.name);
    int64_t n = 1;
    for (int64_t d : t.dims) n = d >= 0 && n < (int64_t(1) << 48) ? n * d : n;
    s.parameter_count += n;
  }
  s.initializer_count = m.graph.initializers.size();
  auto add = [](const ValueInfoProto& v, std::vector<ValueSpec>& specs,
                std::vector<std::string>& types) {
    ValueSpec spec;
    spec.name = v.name;
    spec.has_shape = v.has_shape;
    spec.dims = v.dims;
    types.push_back(v.is_tensor ? elem_type_name(v.elem_type) : "non-tensor");
    specs.push_back(std::move(spec));
  };
  for (const auto& v : m.graph.inputs) {
    if (!init.count(v.name)) add(v, s.inputs, s.input_types);
  }
  for (const auto& v : m.graph.outputs) add(v, s.outputs, s.output_types);
  std::map<std::pair<std::string, std::string>, size_t> counts;
  for (const auto& n : m.graph.nodes) ++counts[{n.op_type, n.domain}];
  for (const auto& [key, count] : counts) {
    s.ops.push_back({key.first, key.second, opset, count,
                     is_supported(key.first, key.second, opset)});
  }
  return s;
}

}  // namespace nascent::onnx
