#pragma once
#include "gpu_layer.h"
#include "vk/kernel.h"
#include "vk/pass.h"

namespace kv {

// Owner of mean_query.comp: each head's mean query as float [H, d] (decode:
// the query itself). Quest and Fier score with it.
class MeanQuery {
 public:
  MeanQuery(const vk::Device& device, const GpuLayer& layer);
  void record(vk::Pass& pass, const vk::Buffer& queries, uint32_t n_queries) const;
  const vk::Buffer& output() const { return output_; }

 private:
  AttentionShape shape_;
  vk::Kernel kernel_;
  vk::Buffer output_;
};

}  // namespace kv
