// Module: a piece of a model with named parameters, buffers (state that is
// not trained, such as batch norm's running mean) and child modules, as in
// PyTorch. Names nest with dots ("features.0.weight"); state_dict() holds
// parameters and buffers under those names, in registration order.
//
// Parameters and buffers are marked persistent in their backend, so a
// backend's trim() of cached memory never takes them. Each lives in a slot
// whose address does not change, so optimizers can hold pointers to them
// (named_parameters()).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nascent/core/tensor.h"

namespace nascent::nn {

struct NamedTensor {
  std::string name;
  Tensor* tensor;
};

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The layer's name and settings, e.g. "Linear(784, 128)".
  virtual std::string describe() const = 0;
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }

  std::vector<NamedTensor> named_parameters();
  std::vector<Tensor*> parameters();
  std::vector<NamedTensor> named_buffers();
  int64_t num_parameters();

  // Parameters and buffers by name (handles sharing their storage).
  std::map<std::string, Tensor> state_dict();
  // Copies values into the parameters and buffers (converted to their dtype
  // and backend). Strict: ValueError naming missing or unexpected entries;
  // ShapeError naming an entry whose shape differs.
  void load_state_dict(const std::map<std::string, Tensor>& state,
                       bool strict = true);

  // Training mode for this module and its children (dropout, batch norm).
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // The module tree, one line per module, for printing.
  std::string summary();

 protected:
  // Hooks around state_dict() and load_state_dict(), for state kept outside
  // tensors (Dropout's random stream): copy it into a buffer before a save,
  // and back after a load.
  virtual void before_save() {}
  virtual void after_load() {}

  // Registers a parameter or buffer (marked persistent) and returns its slot.
  Tensor* register_parameter(const std::string& name, Tensor value);
  Tensor* register_buffer(const std::string& name, Tensor value);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name,
                                     std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }
  // Children in registration order.
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children()
      const {
    return children_;
  }

 private:
  struct Slot {
    std::string name;
    std::unique_ptr<Tensor> tensor;
  };
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name) const;
  void collect(const std::string& prefix, bool buffers,
               std::vector<NamedTensor>& out);
  void visit(const std::function<void(Module&)>& fn);
  void summary_lines(const std::string& prefix, int depth, std::string& out);

  std::vector<Slot> parameters_;
  std::vector<Slot> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// Marks `t` persistent in its backend (parameters, optimizer state) and
// returns it.
Tensor persistent(Tensor t);

// Gives a parameter, buffer or optimizer-state slot a new value: copied in
// place (assign) into a defined slot, whose shape and dtype it must have
// (ShapeError / DTypeError otherwise), so every handle to the storage sees
// it and the storage keeps its persistent mark and requires_grad; an
// undefined slot takes `value` itself and marks it persistent. Parameter
// updates belong inside an autodiff::NoGradGuard.
void set_value(Tensor& slot, Tensor value);

}  // namespace nascent::nn
