#pragma once
#include <cstdint>
#include <vector>

#include "capture.h"
#include "method.h"

namespace kv {

// Per query of a chunk (the observation QuoKA rests on): its cosine to the
// chunk's mean query, how many keys it needs for 90% of its dense attention
// mass, and whether QuoKA keeps it (the N_Q least similar).
struct QueryStats {
  std::vector<float> cosine;
  std::vector<uint32_t> keys_for_90;
  std::vector<bool> kept;
};

// The chunk's queries of one head, on the CPU: O(chunk x T x d). In prefill the
// chunk is the block; in decode, the `chunk` queries that end at the probe.
QueryStats chunk_query_stats(const Capture& capture, int layer, uint32_t head, const Block& block, uint32_t chunk,
                             uint32_t n_q);

}  // namespace kv
