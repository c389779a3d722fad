#pragma once
// The other direction of ggml_blocks.h: float values into ggml's blocks, so
// that any checkpoint can run with quantized weights and tests can make
// quantized models without llama.cpp. The layouts are ggml's (ggml-common.h);
// the scales are chosen simply, not by ggml's iterative searches (which clip
// a sub-block's extremes, for 3-9 % less RMS error on the K types):
//  - Q8_0, Q4_0, Q5_0: the value of largest magnitude on the extreme quant;
//    Q4_1, Q5_1: m from the minimum and d from (max - m), as ggml's reference
//    quantizers have them;
//  - the K types: each sub-block's scale (and minimum) from its extremes,
//    quantized to the type's 4, 6 or 8 bits against the block's fp16 d (and
//    dmin).
// Each value is then rounded to the nearest quant under the scales as stored:
// dequantize(quantize(x)) is each value's nearest point of its sub-block's
// grid, a grid that reaches the sub-block's extremes but for the rounding of
// the scales (and, on the short side of Q4_0's -8..7, a step). Where a
// rounding has a choice it is made so that quantize reproduces its own output
// exactly (tests/test_ggml_quantize.cpp). F32, F16 and BF16 are the plain
// conversions, F16 and BF16 held to their largest finite values.
#include <cstddef>
#include <span>
#include <vector>

#include "formats/ggml_blocks.h"

namespace kv::formats {

// The blocks of `type` holding `values` (whole blocks, finite values; std::invalid_argument
// otherwise). Magnitudes past what the type's fp16 scales reach (about 65504 times its
// largest quant) are clamped to it.
std::vector<std::byte> quantize(GgmlType type, std::span<const float> values);

}  // namespace kv::formats
