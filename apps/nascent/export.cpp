// `nascent export`: a checkpoint of `nascent train-lm` as a GGUF file that
// llama.cpp and `nascent generate` load as a llama model: the trained
// tokenizer's keys, the weights in f32, f16 or bf16, or any of
// llama-quantize's types and mixes (the f32 export quantized as
// `nascent quantize` does, so the bytes are llama.cpp's).
#include <fmt/format.h>

#include "apps/nascent/command.h"
#include "nascent/backends/device.h"
#include "nascent/models/llama/lm_trainer.h"
#include "nascent/models/llama/quantize.h"
#include "nascent/train/checkpoint.h"

namespace {

using namespace nascent;

struct Args {
  std::string checkpoint;
  std::string output;
  std::string type = "f16";
  std::string name = "nascent llama";
};

int export_gguf(const Args& args) {
  const std::optional<llama::FileType> type =
      llama::file_type_from_name(args.type);
  if (!type) {
    throw ValueError(fmt::format("export: unknown type \"{}\" (one of {})",
                                 args.type, llama::file_type_names()));
  }
  const llama::LmOptions o =
      llama::LmTrainer::checkpoint_options(args.checkpoint);
  const gguf::Metadata tok =
      llama::LmTrainer::checkpoint_tokenizer(args.checkpoint);
  std::unique_ptr<Backend> cpu = make_backend("cpu");
  llama::TrainableModel model(o.config(), *cpu, 0);
  train::load_checkpoint(args.checkpoint, model, nullptr);
  const bool plain = *type == llama::FileType::all_f32 ||
                     *type == llama::FileType::f16 ||
                     *type == llama::FileType::bf16;
  llama::export_gguf(model, tok,
                     plain ? llama::default_type(*type) : QuantType::f32,
                     args.output, args.name);
  if (!plain) {
    llama::QuantizeOptions q;
    q.type = *type;
    llama::quantize_model(args.output, args.output, q);
  }
  fmt::print("{}: {} ({} parameters) as {} -> {}\n", args.checkpoint,
             model.describe(), model.num_parameters(), llama::name(*type),
             args.output);
  return 0;
}

}  // namespace

NASCENT_COMMAND(
    "export", "write a train-lm checkpoint as a GGUF model llama.cpp runs",
    [](CLI::App& sub) -> std::function<int()> {
      auto args = std::make_shared<Args>();
      sub.add_option("checkpoint", args->checkpoint,
                     "checkpoint of nascent train-lm (.safetensors)")
          ->required();
      sub.add_option("output", args->output, "GGUF file to write")->required();
      sub.add_option("--type", args->type,
                     "f32, f16, bf16 or a llama-quantize type (q8_0, q4_k_m, "
                     "...)")
          ->capture_default_str();
      sub.add_option("--name", args->name, "general.name of the model")
          ->capture_default_str();
      return [=] { return export_gguf(*args); };
    });
