// GGUF metadata as JSON and back, with each value's GGUF type kept, so a
// table survives a trip through a JSON store (a checkpoint's metadata keeps
// the tokenizer of a model in training this way) and comes back equal.
//
//   {"tokenizer.ggml.model": {"type": "string", "value": "llama"},
//    "tokenizer.ggml.scores": {"type": "f32[]", "value": [0.0, -1.0]}}
//
// Keys keep their order (a JSON array of [key, typed value] pairs).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "nascent/io/gguf.h"

namespace nascent::gguf {

// ValueError for what JSON cannot hold: non-finite floats, arrays of arrays.
nlohmann::json to_json(const Metadata& metadata);
// FormatError naming `origin` and the key for anything malformed.
Metadata metadata_from_json(const nlohmann::json& j, const std::string& origin);

}  // namespace nascent::gguf
