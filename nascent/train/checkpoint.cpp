#include "nascent/train/checkpoint.h"

#include <fmt/format.h>

#include "nascent/io/safetensors.h"

namespace nascent::train {

using io::Metadata;
using io::SafetensorsEntry;
using io::SafetensorsReader;
using io::save_safetensors;

namespace {

using nlohmann::json;

constexpr const char* kFormatKey = "format";
constexpr const char* kFormat = "nascent.checkpoint.v1";
constexpr const char* kModelPrefix = "model.";
constexpr const char* kOptimizerPrefix = "optimizer.";

json parse_metadata(const Metadata& meta, const char* key,
                    const std::string& path) {
  auto it = meta.find(key);
  if (it == meta.end()) {
    throw FormatError(
        fmt::format("{}: checkpoint metadata lacks \"{}\"", path, key));
  }
  json j = json::parse(it->second, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    throw FormatError(fmt::format(
        "{}: checkpoint metadata \"{}\" is not a JSON object", path, key));
  }
  return j;
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

}  // namespace

void save_checkpoint(const std::string& path, nn::Module& model,
                     const optim::Optimizer* optimizer, const json& training) {
  if (!training.is_object()) {
    throw ValueError(fmt::format(
        "save_checkpoint: {}: the training state must be a JSON object", path));
  }
  std::map<std::string, Tensor> tensors;
  for (auto& [name, t] : model.state_dict()) tensors[kModelPrefix + name] = t;
  Metadata meta;
  meta[kFormatKey] = kFormat;
  meta["training"] = training.dump();
  if (optimizer) {
    optim::OptimizerState state = optimizer->state_dict();
    for (auto& [key, t] : state.tensors) tensors[kOptimizerPrefix + key] = t;
    meta["optimizer"] = state.config.dump();
  }
  save_safetensors(path, tensors, meta);
}

Checkpoint read_checkpoint(const std::string& path, Backend& backend) {
  SafetensorsReader reader(path);
  const Metadata& meta = reader.metadata();
  auto format = meta.find(kFormatKey);
  if (format == meta.end() || format->second != kFormat) {
    throw FormatError(fmt::format(
        "{}: not a nascent checkpoint (metadata \"{}\" is \"{}\", expected "
        "\"{}\")",
        path, kFormatKey, format == meta.end() ? "" : format->second, kFormat));
  }
  Checkpoint c;
  c.training = parse_metadata(meta, "training", path);
  c.has_optimizer = meta.count("optimizer") != 0;
  if (c.has_optimizer) {
    c.optimizer.config = parse_metadata(meta, "optimizer", path);
  }
  for (const SafetensorsEntry& e : reader.entries()) {
    if (starts_with(e.name, kModelPrefix)) {
      c.model[e.name.substr(std::string(kModelPrefix).size())] =
          reader.load(e.name, backend);
    } else if (starts_with(e.name, kOptimizerPrefix) && c.has_optimizer) {
      c.optimizer.tensors[e.name.substr(std::string(kOptimizerPrefix).size())] =
          reader.load(e.name, backend);
    } else {
      throw FormatError(fmt::format(
          "{}: tensor \"{}\" is neither model.* nor optimizer.* state", path,
          e.name));
    }
  }
  return c;
}

json load_checkpoint(const std::string& path, nn::Module& model,
                     optim::Optimizer* optimizer) {
  // Copies: loading writes into the parameters' storage in place.
  std::map<std::string, Tensor> before = model.state_dict();
  for (auto& [name, t] : before) t = t.clone();
  Backend& backend =
      before.empty() ? default_backend() : before.begin()->second.backend();
  Checkpoint c = read_checkpoint(path, backend);
  if (optimizer && !c.has_optimizer) {
    throw ValueError(
        fmt::format("load_checkpoint: {} holds no optimizer state", path));
  }
  try {
    model.load_state_dict(c.model);
    if (optimizer) optimizer->load_state_dict(c.optimizer);
  } catch (const ShapeError& e) {
    model.load_state_dict(before);
    throw ShapeError(fmt::format("load_checkpoint: {}: {}", path, e.what()));
  } catch (const ValueError& e) {
    model.load_state_dict(before);
    throw ValueError(fmt::format("load_checkpoint: {}: {}", path, e.what()));
  }
  return c.training;
}

}  // namespace nascent::train
