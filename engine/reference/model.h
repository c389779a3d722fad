#pragma once
// The model runner's float64 reference: a Llama-family forward pass over a
// checkpoint's stored weights, one token after another with a KV cache.
#include <cstdint>
#include <span>
#include <vector>

#include "model/checkpoint.h"

namespace kv::reference {

// Logits [tokens.size()][vocab] of every position of `tokens` from position 0.
// q, k and v are rounded to the checkpoint's storage type before attention,
// where the engine stores them (its queries and KV cache); everything else is float64.
std::vector<std::vector<double>> model_logits(const model::Checkpoint& checkpoint, std::span<const int32_t> tokens);

// What a capture of layer `layer` holds for `tokens` from position 0: q
// [H, T, d], k and v [G, T, d] after RoPE, rounded to the storage type.
struct LayerQkv {
  std::vector<double> q, k, v;
};
LayerQkv model_qkv(const model::Checkpoint& checkpoint, std::span<const int32_t> tokens, uint32_t layer);

}  // namespace kv::reference
