#include "nascent/nn/module.h"

#include "nascent/core/ops.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace nascent::nn {

Tensor persistent(Tensor t) {
  t.backend().set_persistent(t, true);
  return t;
}

void set_value(Tensor& slot, Tensor value) {
  if (!slot.defined()) {
    slot = persistent(std::move(value));
    return;
  }
  if (value.shape() != slot.shape()) {
    throw ShapeError(fmt::format("set_value: {} cannot replace {}",
                                 value.to_string(), slot.to_string()));
  }
  if (value.dtype() != slot.dtype()) {
    throw DTypeError(fmt::format("set_value: {} cannot replace {}",
                                 value.to_string(), slot.to_string()));
  }
  // In place: the storage, and with it the persistent mark, autodiff's
  // requires_grad and every other handle to the parameter, stays.
  assign(slot, value);
}

void Module::check_new_name(const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos) {
    throw ValueError(fmt::format(
        "{}: \"{}\" cannot name a parameter, buffer or child (empty or has a "
        "dot)",
        describe(), name));
  }
  auto taken = [&](const auto& list) {
    for (const auto& entry : list) {
      if (entry.first == name) return true;
    }
    return false;
  };
  bool dup = taken(children_);
  for (const Slot& s : parameters_) dup = dup || s.name == name;
  for (const Slot& s : buffers_) dup = dup || s.name == name;
  if (dup) {
    throw ValueError(
        fmt::format("{}: \"{}\" is registered twice", describe(), name));
  }
}

Tensor* Module::register_parameter(const std::string& name, Tensor value) {
  check_new_name(name);
  if (!value.defined()) {
    throw ValueError(
        fmt::format("{}: parameter \"{}\" is undefined", describe(), name));
  }
  parameters_.push_back({name, std::make_unique<Tensor>(persistent(value))});
  return parameters_.back().tensor.get();
}

Tensor* Module::register_buffer(const std::string& name, Tensor value) {
  check_new_name(name);
  if (!value.defined()) {
    throw ValueError(
        fmt::format("{}: buffer \"{}\" is undefined", describe(), name));
  }
  buffers_.push_back({name, std::make_unique<Tensor>(persistent(value))});
  return buffers_.back().tensor.get();
}

void Module::add_child(const std::string& name,
                       std::shared_ptr<Module> module) {
  check_new_name(name);
  if (!module) {
    throw ValueError(fmt::format("{}: child \"{}\" is null", describe(), name));
  }
  module->train(training_);
  children_.emplace_back(name, std::move(module));
}

void Module::collect(const std::string& prefix, bool buffers,
                     std::vector<NamedTensor>& out) {
  for (Slot& s : buffers ? buffers_ : parameters_) {
    out.push_back({prefix + s.name, s.tensor.get()});
  }
  for (auto& [name, child] : children_) {
    child->collect(prefix + name + ".", buffers, out);
  }
}

std::vector<NamedTensor> Module::named_parameters() {
  std::vector<NamedTensor> out;
  collect("", false, out);
  return out;
}

std::vector<Tensor*> Module::parameters() {
  std::vector<Tensor*> out;
  for (const NamedTensor& p : named_parameters()) out.push_back(p.tensor);
  return out;
}

std::vector<NamedTensor> Module::named_buffers() {
  std::vector<NamedTensor> out;
  collect("", true, out);
  return out;
}

int64_t Module::num_parameters() {
  int64_t n = 0;
  for (const NamedTensor& p : named_parameters()) n += p.tensor->numel();
  return n;
}

void Module::visit(const std::function<void(Module&)>& fn) {
  fn(*this);
  for (auto& [name, child] : children_) child->visit(fn);
}

std::map<std::string, Tensor> Module::state_dict() {
  visit([](Module& m) { m.before_save(); });
  std::map<std::string, Tensor> out;
  for (const NamedTensor& p : named_parameters()) out[p.name] = *p.tensor;
  for (const NamedTensor& b : named_buffers()) out[b.name] = *b.tensor;
  return out;
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state,
                             bool strict) {
  std::vector<NamedTensor> slots = named_parameters();
  std::vector<NamedTensor> buffers = named_buffers();
  slots.insert(slots.end(), buffers.begin(), buffers.end());
  // Check everything before changing anything.
  std::vector<std::string> missing, unexpected;
  std::map<std::string, Tensor*> by_name;
  for (const NamedTensor& s : slots) {
    by_name[s.name] = s.tensor;
    auto it = state.find(s.name);
    if (it == state.end()) {
      missing.push_back(s.name);
    } else if (it->second.shape() != s.tensor->shape()) {
      throw ShapeError(fmt::format(
          "load_state_dict: \"{}\" is {} in the state but {} in {}", s.name,
          it->second.to_string(), s.tensor->to_string(), describe()));
    }
  }
  for (const auto& [name, t] : state) {
    if (!by_name.count(name)) unexpected.push_back(name);
  }
  if (strict && (!missing.empty() || !unexpected.empty())) {
    throw ValueError(fmt::format(
        "load_state_dict: {}: missing [{}], unexpected [{}]", describe(),
        fmt::join(missing, ", "), fmt::join(unexpected, ", ")));
  }
  for (const NamedTensor& s : slots) {
    auto it = state.find(s.name);
    if (it == state.end()) continue;
    // Copied into the slot's own storage (converted to its dtype).
    set_value(*s.tensor,
              it->second.to(s.tensor->backend()).cast(s.tensor->dtype()));
  }
  visit([](Module& m) { m.after_load(); });
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::summary_lines(const std::string& prefix, int depth,
                           std::string& out) {
  int64_t own = 0;
  for (const Slot& s : parameters_) own += s.tensor->numel();
  out += fmt::format("{:{}}{}{}", "", 2 * depth,
                     prefix.empty() ? "" : prefix + ": ", describe());
  if (own > 0) out += fmt::format("  [{} parameters]", own);
  out += "\n";
  for (auto& [name, child] : children_) {
    child->summary_lines(name, depth + 1, out);
  }
}

std::string Module::summary() {
  std::string out;
  summary_lines("", 0, out);
  out += fmt::format("{} parameters in all\n", num_parameters());
  return out;
}

}  // namespace nascent::nn
