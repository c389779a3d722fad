#pragma once
#include <cstdint>
#include <vector>

#include "io/block.h"
#include "io/capture.h"

namespace kv {

// Per query of a chunk (the observation QuoKA rests on): its cosine to the
// chunk's mean query, how many keys it needs for 90% of its dense attention
// mass, and whether QuoKA keeps it (the N_Q least similar).
struct QueryStats {
  std::vector<float> cosine;
  std::vector<uint32_t> keys_for_90;
  std::vector<bool> kept;
};

// The queries the statistics describe: in prefill the block's chunk; in decode,
// the `chunk` queries that end at the probe. Positions [first, last).
struct QueryRange {
  uint32_t first = 0, last = 0;
};
QueryRange query_stats_range(const Block& block, uint32_t chunk);

// QuoKA's kept queries: the n_q least similar to the mean (ties toward the
// lower position); all of them when the chunk has at most n_q.
std::vector<bool> kept_queries(const std::vector<float>& cosine, uint32_t n_q);

}  // namespace kv
