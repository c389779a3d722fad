#pragma once
// Models without weights: a config's shapes with seeded random values drawn
// on the GPU (model_random_fill.comp), so that any architecture can be timed
// at its real size, as vLLM's dummy weights allow. Speed does not depend on
// the values; accuracy means nothing with them.
#include <cstdint>
#include <vector>

#include "io/safetensors.h"

namespace kv::model {

// The fill kernel's key for tensor `index` of a model drawn with `seed`.
uint32_t random_weight_key(uint32_t seed, uint32_t index);
// The host twin of model_random_fill.comp: the first `count` values of the
// tensor of `key`, in `dtype`'s bytes (exact: every value has at most 8
// significant bits).
std::vector<std::byte> random_weight_bytes(DType dtype, uint32_t key, size_t count);

}  // namespace kv::model
