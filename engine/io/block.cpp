#include "io/block.h"

#include <algorithm>

#include "base/error.h"

namespace kv {

const char* mode_name(Mode mode) { return mode == Mode::decode ? "decode" : "prefill"; }

SelectionRows selection_rows(const AttentionShape& shape, Granularity granularity) {
  if (granularity == Granularity::kv_head) return {shape.kv_heads, shape.group()};
  return {shape.heads, 1};
}

const char* granularity_name(Granularity granularity) {
  return granularity == Granularity::query_head ? "query_head" : "kv_head";
}

std::vector<Block> decode_blocks(uint32_t tokens, uint32_t probes) {
  std::vector<Block> blocks;
  for (uint32_t t = tokens - std::min(probes, tokens); t < tokens; ++t) blocks.push_back({Mode::decode, t, 1});
  return blocks;
}

std::vector<Block> prefill_blocks(uint32_t tokens, uint32_t chunk) {
  if (chunk == 0) throw InputError("a chunk must hold at least one query", "chunk");
  std::vector<Block> blocks;
  for (uint32_t first = 0; first < tokens; first += chunk)
    blocks.push_back({Mode::prefill, first, std::min(chunk, tokens - first)});
  return blocks;
}

}  // namespace kv
