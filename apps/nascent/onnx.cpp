// `nascent onnx info model.onnx` and `nascent onnx run model.onnx -i
// NAME=FILE.npy ... -o FILE.npy [--device cpu|cuda] [--bench]`: an exported
// ONNX model described, or run on .npy inputs.
#include <chrono>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "apps/nascent/command.h"
#include "nascent/backends/cpu/thread_pool.h"
#include "nascent/backends/device.h"
#include "nascent/core/error.h"
#include "nascent/io/npy.h"
#include "nascent/onnx/model.h"

namespace {

using namespace nascent;

// "input FLOAT[N, 1, 28, 28]": ONNX's type name, dims or their names.
std::string type_and_shape(const onnx::ValueSpec& v, const std::string& type) {
  if (!v.has_shape) return fmt::format("{} {}[?]", v.name, type);
  std::vector<std::string> dims;
  for (const auto& d : v.dims) {
    dims.push_back(d.value >= 0 ? std::to_string(d.value)
                                : (d.param.empty() ? "?" : d.param));
  }
  return fmt::format("{} {}[{}]", v.name, type, fmt::join(dims, ", "));
}

int info(const std::string& path) {
  onnx::Summary s = onnx::inspect(path);
  fmt::print("{}: ONNX IR version {}, producer {}\n", path, s.ir_version,
             s.producer.empty() ? "unknown" : s.producer);
  for (const auto& o : s.opset_imports) {
    fmt::print("opset {} {}\n", o.domain.empty() ? "ai.onnx" : o.domain,
               o.version);
  }
  fmt::print("\ninputs:\n");
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    fmt::print("  {}\n", type_and_shape(s.inputs[i], s.input_types[i]));
  }
  fmt::print("outputs:\n");
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    fmt::print("  {}\n", type_and_shape(s.outputs[i], s.output_types[i]));
  }
  fmt::print("\n{} initializers, {} parameters\n", s.initializer_count,
             s.parameter_count);
  size_t nodes = 0;
  std::vector<std::string> missing;
  fmt::print("\n{:<24} {:>6}  {}\n", "operator", "count", "supported");
  for (const auto& op : s.ops) {
    std::string name = op.domain.empty() || op.domain == "ai.onnx"
                           ? op.op_type
                           : op.domain + "::" + op.op_type;
    fmt::print("{:<24} {:>6}  {}\n", name, op.count,
               op.supported ? "yes" : "NO");
    nodes += op.count;
    if (!op.supported) missing.push_back(name);
  }
  fmt::print("{} nodes\n", nodes);
  if (missing.empty()) {
    fmt::print("all operators are supported\n");
  } else {
    fmt::print("unsupported operators: {}\n", fmt::join(missing, ", "));
  }
  return 0;
}

struct RunArgs {
  std::string model, device = "cpu";
  std::vector<std::string> inputs, outputs;
  bool bench = false;
  int threads = 0, rounds = 10;
};

int run(const RunArgs& a) {
  if (a.threads > 0) cpu::set_num_threads(a.threads);
  std::unique_ptr<Backend> backend = make_backend(a.device);
  onnx::Model m = onnx::load(a.model, *backend);
  // Inputs: NAME=FILE, or FILEs in the model's input order.
  std::vector<Tensor> xs(m.inputs().size());
  size_t next = 0;
  for (const std::string& arg : a.inputs) {
    size_t eq = arg.find('=');
    size_t k = next;
    std::string file = arg;
    if (eq != std::string::npos) {
      std::string name = arg.substr(0, eq);
      file = arg.substr(eq + 1);
      k = m.inputs().size();
      for (size_t i = 0; i < m.inputs().size(); ++i) {
        if (m.inputs()[i].name == name) k = i;
      }
      if (k == m.inputs().size()) {
        throw ValueError(
            fmt::format("onnx run: the model has no input '{}'", name));
      }
    } else {
      ++next;
    }
    if (k >= xs.size()) {
      throw ValueError(
          fmt::format("onnx run: more inputs than the model's {}", xs.size()));
    }
    xs[k] = npy::read(file, *backend);
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i].defined()) {
      throw ValueError(fmt::format("onnx run: input '{}' ({}) is not given",
                                   m.inputs()[i].name,
                                   onnx::to_string(m.inputs()[i])));
    }
  }
  std::vector<Tensor> ys = m.run(xs);
  if (a.bench) {
    std::vector<double> ms;
    for (int r = 0; r < a.rounds; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      std::vector<Tensor> y = m.run(xs);
      for (const Tensor& t : y) (void)t.to_vector<float>();
      ms.push_back(std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - t0)
                       .count());
    }
    std::sort(ms.begin(), ms.end());
    fmt::print(stderr, "{}: {} runs on {}: median {:.3f} ms, min {:.3f} ms\n",
               a.model, a.rounds, describe_backend(*backend), ms[ms.size() / 2],
               ms[0]);
  }
  // Outputs: -o FILE for one output, -o NAME=FILE for several.
  for (const std::string& arg : a.outputs) {
    size_t eq = arg.find('=');
    size_t k = 0;
    std::string file = arg;
    if (eq != std::string::npos) {
      std::string name = arg.substr(0, eq);
      file = arg.substr(eq + 1);
      k = ys.size();
      for (size_t i = 0; i < ys.size(); ++i) {
        if (m.outputs()[i].name == name) k = i;
      }
      if (k == ys.size()) {
        throw ValueError(
            fmt::format("onnx run: the model has no output '{}'", name));
      }
    } else if (ys.size() != 1) {
      throw ValueError(fmt::format(
          "onnx run: the model has {} outputs: name one with -o NAME=FILE",
          ys.size()));
    }
    npy::write(file, ys[k]);
  }
  if (a.outputs.empty()) {
    for (size_t i = 0; i < ys.size(); ++i) {
      fmt::print("{}: {}\n", m.outputs()[i].name, ys[i].to_string());
    }
  }
  return 0;
}

}  // namespace

NASCENT_COMMAND(
    "onnx", "describe (info) or run (run) an ONNX model",
    [](CLI::App& sub) -> std::function<int()> {
      sub.require_subcommand(1);
      auto info_path = std::make_shared<std::string>();
      CLI::App* i = sub.add_subcommand(
          "info", "opset, inputs, outputs, operator counts, unsupported ops");
      i->add_option("model", *info_path, "the .onnx file")
          ->required()
          ->check(CLI::ExistingFile);
      auto args = std::make_shared<RunArgs>();
      CLI::App* r = sub.add_subcommand("run", "run a model on .npy inputs");
      r->add_option("model", args->model, "the .onnx file")
          ->required()
          ->check(CLI::ExistingFile);
      r->add_option("-i,--input", args->inputs,
                    "NAME=FILE.npy, or FILE.npy in input order (repeatable)");
      r->add_option("-o,--output", args->outputs,
                    "FILE.npy (one output) or NAME=FILE.npy (repeatable)");
      r->add_option("-d,--device", args->device,
                    "cpu (default), cpu:composed, cuda or cuda:N");
      r->add_option("-t,--threads", args->threads, "CPU threads")
          ->check(CLI::Range(1, 1024));
      r->add_flag("--bench", args->bench, "time repeated runs");
      r->add_option("--rounds", args->rounds, "runs for --bench (default 10)")
          ->check(CLI::Range(1, 100000));
      return [=] { return i->parsed() ? info(*info_path) : run(*args); };
    });
