#pragma once
#include "kernels/gpu_layer.h"
#include "vk/kernel.h"
#include "vk/pass.h"

namespace kv {

// Where a scoring kernel finds each head's query (shaders/head_query.glsl):
// `raw_query` 1 = the step's own queries in the storage type, 0 = fp32 means.
struct QuerySource {
  const vk::Buffer* buffer = nullptr;
  uint32_t raw_query = 0;
};

// Owner of mean_query.comp: each head's mean query as float [H, d], which Quest,
// Fier, SparQ and Loki score a chunk with. A step of one query needs no mean: its
// queries are read in place, which saves decode a stage.
class MeanQuery {
 public:
  MeanQuery(const vk::Device& device, const GpuLayer& layer);
  QuerySource record(vk::Pass& pass, const vk::Buffer& queries, uint32_t n_queries) const;

 private:
  AttentionShape shape_;
  vk::Kernel kernel_;
  vk::Buffer output_;
};

}  // namespace kv
