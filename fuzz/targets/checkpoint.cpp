// Checkpoint reader: a fuzzed file through read_checkpoint (the safetensors
// layer, the metadata's JSON, the model and optimizer state), then restored
// into the model the seeds were saved from, with its optimizer.
#include "nascent/train/checkpoint.h"
#include "fuzz/fuzz_target.h"
#include "fuzz/seed_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nascent;
  static fuzz::ScratchFile file(".safetensors");
  static fuzz::SeedModel model;
  try {
    const std::string& path = file.write(data, size);
    train::Checkpoint c = train::read_checkpoint(path, default_backend());
    (void)c.training.dump();
    train::load_checkpoint(path, model.net, model.optimizer.get());
  } catch (const Error&) {
  }
  return 0;
}
