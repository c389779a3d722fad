#pragma once
// The model runner's float64 reference: a Llama-family forward pass over a
// checkpoint's stored weights, one token after another with a KV cache.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "io/block.h"
#include "model/checkpoint.h"
#include "reference/selection.h"

namespace kv::reference {

// Logits [tokens.size()][vocab] of every position of `tokens` from position 0.
// q, k and v are rounded to the checkpoint's storage type before attention,
// where the engine stores them (its queries and KV cache); everything else is float64.
std::vector<std::vector<double>> model_logits(const model::Checkpoint& checkpoint, std::span<const int32_t> tokens);

// Which keys a block's queries attend in one layer, given the layer's q, k
// and v so far (positions up to the block's last): per query head, the
// selected positions (-1 ignored), to which a prefill chunk adds its own
// causal keys; std::nullopt: every key up to the query.
using AttendRule = std::function<std::optional<Selection>(uint32_t layer, const HostLayer& so_far, const Block& block)>;

// The same with the positions taken in `blocks` (in order, covering tokens)
// and each block's attention narrowed by `rule` (none: dense). With
// `round_stored` false, q, k and v stay float64: how far that moves the logits
// is how far the storage's rounding can move them, the scale of the gap
// between an implementation whose values fall a rounding step apart from
// these (float32 arithmetic ahead of the same rounding) and this pass.
std::vector<std::vector<double>> model_logits(const model::Checkpoint& checkpoint, std::span<const int32_t> tokens,
                                              const std::vector<Block>& blocks, const AttendRule& rule,
                                              bool round_stored = true);

// What a capture of layer `layer` holds for `tokens` from position 0: q
// [H, T, d], k and v [G, T, d] after RoPE, rounded to the storage type.
struct LayerQkv {
  std::vector<double> q, k, v;
};
LayerQkv model_qkv(const model::Checkpoint& checkpoint, std::span<const int32_t> tokens, uint32_t layer);

}  // namespace kv::reference
