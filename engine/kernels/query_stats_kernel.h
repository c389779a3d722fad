#pragma once
#include "kernels/gpu_layer.h"
#include "kernels/query_stats.h"
#include "vk/kernel.h"

namespace kv {

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
