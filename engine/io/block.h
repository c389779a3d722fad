#pragma once
// The vocabulary every layer of the engine shares: the two regimes, a block of
// queries that one selection serves, and what a selection's rows are.
#include <cstdint>
#include <vector>

#include "io/capture.h"

namespace kv {

enum class Mode { decode, prefill };
enum class Granularity { query_head, kv_head };

const char* mode_name(Mode mode);
const char* granularity_name(Granularity granularity);

// The rows of a selection: one a query head, or one a KV head serving the
// query heads of its group.
struct SelectionRows {
  uint32_t count = 0;
  uint32_t heads_per_row = 1;
};
SelectionRows selection_rows(const AttentionShape& shape, Granularity granularity);

// One selection step: a decode probe at position t, or a prefill chunk.
struct Block {
  Mode mode = Mode::decode;
  uint32_t first_query = 0;  // decode: t; prefill: the chunk's first position
  uint32_t n_queries = 1;    // decode: 1; prefill: the chunk's length
  // Keys a selection picks from: [0, t] in decode, the past [0, c * B_CP) in prefill.
  uint32_t candidates() const { return mode == Mode::decode ? first_query + 1 : first_query; }
};

// The last `probes` positions, one block each.
std::vector<Block> decode_blocks(uint32_t tokens, uint32_t probes);
// Chunks of `chunk` queries; chunk 0 is included (it has no past).
std::vector<Block> prefill_blocks(uint32_t tokens, uint32_t chunk);

}  // namespace kv
