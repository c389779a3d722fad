#include "block.h"

#include <algorithm>

#include "error.h"

namespace kv {

const char* mode_name(Mode mode) { return mode == Mode::decode ? "decode" : "prefill"; }

const char* granularity_name(Granularity granularity) {
  return granularity == Granularity::query_head ? "query_head" : "kv_head";
}

std::vector<Block> decode_blocks(uint32_t tokens, uint32_t probes) {
  std::vector<Block> blocks;
  for (uint32_t t = tokens - std::min(probes, tokens); t < tokens; ++t) blocks.push_back({Mode::decode, t, 1});
  return blocks;
}

std::vector<Block> prefill_blocks(uint32_t tokens, uint32_t chunk) {
  if (chunk == 0) throw InputError("--chunk must be positive");
  std::vector<Block> blocks;
  for (uint32_t first = 0; first < tokens; first += chunk)
    blocks.push_back({Mode::prefill, first, std::min(chunk, tokens - first)});
  return blocks;
}

}  // namespace kv
