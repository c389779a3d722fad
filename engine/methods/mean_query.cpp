#include "methods/mean_query.h"

#include "../shaders/layouts.h"
#include "mean_query.spv.h"
#include "methods/kernels.h"

namespace kv {

MeanQuery::MeanQuery(const vk::Device& device, const GpuLayer& layer)
    : shape_(layer.shape),
      kernel_(make_layer_kernel<layouts::MeanQueryPush>(device, "mean_query", mean_query_spirv, 2, layer.shape, layer.dtype)),
      output_(device, size_t(layer.shape.heads) * layer.shape.dim * sizeof(float)) {}

QuerySource MeanQuery::record(vk::Pass& pass, const vk::Buffer& queries, uint32_t n_queries) const {
  if (n_queries == 1) return {&queries, 1};
  layouts::MeanQueryPush push{shape_.heads, n_queries};
  pass.dispatch(kernel_, {&queries, &output_}, push, shape_.heads, 1, 1, "mean_query");
  return {&output_, 0};
}

}  // namespace kv
