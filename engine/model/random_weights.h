#pragma once
// Models without weights: a config's shapes with seeded random values drawn
// on the GPU (model_random_fill.comp), so that any architecture can be timed
// at its real size, as vLLM's dummy weights allow. Speed does not depend on
// the values; accuracy means nothing with them.
#include <cstdint>
#include <vector>

#include "formats/ggml_blocks.h"
#include "io/safetensors.h"

namespace kv::model {

// The fill kernel's key for tensor `index` of a model drawn with `seed`.
uint32_t random_weight_key(uint32_t seed, uint32_t index);
// The host twin of model_random_fill.comp: the first `count` values of the
// tensor of `key`, in `dtype`'s bytes (exact: every value has at most 8
// significant bits).
std::vector<std::byte> random_weight_bytes(DType dtype, uint32_t key, size_t count);
// The host twin of model_random_fill.comp's blocks: the first `bytes` bytes
// (a multiple of 4) of the matrix of `key` drawn as ggml blocks of `type`:
// word w the hash of (key, w), each block's fp16 scales fixed (d, and d_min
// or m: Q8_0 2^-12, Q4_0 and Q4_1 2^-8, Q5_0 and Q5_1 2^-9, Q2_K 2^-10,
// Q3_K 2^-12, Q4_K, Q5_K and Q6_K 2^-14; Q4_1's and Q5_1's m -2^-5; the K
// types' d_min equal to d).
std::vector<std::byte> random_block_bytes(formats::GgmlType type, uint32_t key, size_t bytes);

}  // namespace kv::model
