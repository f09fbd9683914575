// Reference conversions between f32 and the GGML block types of
// core/quant.h, on the host: what backends without their own codecs, the
// GGUF quantizer and the tests use. The block layouts are in blocks.h.
#pragma once

#include <cstdint>

#include "nascent/core/quant.h"

namespace nascent::quant {

// Reference (scalar, single-threaded) conversions of n values, n a multiple
// of the block size (checked, ShapeError). quantize_row follows ggml's
// reference quantizers (quantize_row_*_ref, no importance matrix) step by
// step, so a file quantized here matches one llama-quantize writes up to
// the last bit of float rounding (ggml may fuse multiply-adds). dst of
// quantize_row holds row_bytes(type, n) bytes; neither pointer needs any
// alignment.
void quantize_row(QuantType type, const float* src, void* dst, int64_t n);
void dequantize_row(QuantType type, const void* src, float* dst, int64_t n);

}  // namespace nascent::quant
