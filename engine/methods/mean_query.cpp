#include "methods/mean_query.h"

#include "../shaders/layouts.h"
#include "kernels/layer_kernel.h"
#include "mean_query.spv.h"

namespace kv {

// mean_query's workgroup: each invocation sums n / (workgroup / (d / 8)) of the
// queries. On the H100, 128 queries: 6.0 us at 128, 5.5 at 256 and 512
// (docs/perf-experiments.md); 256 keeps its shared memory at 8 KB.
constexpr uint32_t kMeanQueryWorkgroup = 256;

MeanQuery::MeanQuery(const vk::Device& device, const GpuLayer& layer)
    : shape_(layer.shape),
      kernel_(make_layer_kernel<layouts::MeanQueryPush>(device, "mean_query", mean_query_spirv, 2, layer.shape, layer.dtype,
                                                        {kMeanQueryWorkgroup})),
      output_(device, size_t(layer.shape.heads) * layer.shape.dim * sizeof(float)) {}

QuerySource MeanQuery::record(vk::Pass& pass, const vk::Buffer& queries, uint32_t n_queries) const {
  if (n_queries == 1) return {&queries, 1};
  layouts::MeanQueryPush push{shape_.heads, n_queries};
  pass.dispatch(kernel_, {&queries, &output_}, push, shape_.heads, 1, 1, "mean_query");
  return {&output_, 0};
}

}  // namespace kv
