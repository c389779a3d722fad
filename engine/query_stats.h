#pragma once
#include <cstdint>
#include <vector>

#include "capture.h"
#include "gpu_layer.h"
#include "block.h"
#include "vk/kernel.h"

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

// Owner of query_stats.comp: the statistics of one head's chunk on the GPU
// (one workgroup per query; a scratch row of probabilities per query).
class QueryStatistics {
 public:
  QueryStatistics(const vk::Device& device, const CaptureLayer& layer, const GpuLayer& gpu);
  QueryStats compute(uint32_t head, const Block& block, uint32_t chunk, uint32_t n_q);

 private:
  const vk::Device& device_;
  const CaptureLayer& layer_;
  const GpuLayer& gpu_;
  vk::Kernel kernel_;
  vk::Buffer queries_, probabilities_, cosines_, counts_;
};

}  // namespace kv
