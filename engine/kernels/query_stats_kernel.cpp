#include "kernels/query_stats_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "../shaders/layouts.h"
#include "kernels/layer_kernel.h"
#include "query_stats.spv.h"
#include "vk/pass.h"

namespace kv {

QueryStatistics::QueryStatistics(const vk::Device& device, const CaptureLayer& layer, const GpuLayer& gpu)
    : device_(device),
      layer_(layer),
      gpu_(gpu),
      kernel_(make_layer_kernel<layouts::QueryStatsPush>(device, "query_stats", query_stats_spirv, 5, layer.shape,
                                                         layer.dtype)) {}

QueryStats QueryStatistics::compute(uint32_t head, const Block& block, uint32_t chunk, uint32_t n_q) {
  const AttentionShape& s = layer_.shape;
  const QueryRange range = query_stats_range(block, chunk);
  const uint32_t n = range.last - range.first;
  const size_t row_bytes = size_t(s.dim) * dtype_size(layer_.dtype);
  // Buffers grow to the largest chunk seen; the viewer calls this on every head or chunk change.
  vk::grown(device_, queries_, n * row_bytes);
  vk::grown(device_, probabilities_, size_t(n) * range.last * sizeof(float));
  vk::grown(device_, cosines_, n * sizeof(float));
  vk::grown(device_, counts_, n * sizeof(uint32_t));
  queries_.upload(layer_.q->data.subspan((size_t(head) * s.tokens + range.first) * row_bytes, n * row_bytes));

  // query_stats.comp's loops per invocation: per 256 keys their scores (d / 8
  // chunks), probabilities, 31 bisection steps and the count; the chunk's n
  // queries for the mean. Past a loop limit (vk::DeviceInfo::loop_limit) the
  // counts would be wrong without a word, so refuse.
  const uint64_t loop_iterations = uint64_t(ceil_div(range.last, 256)) * (s.dim / 8 + 36) + 32 * 12 + n;
  if (!within_loop_limit(device_, loop_iterations))
    throw InputError("query statistics over " + std::to_string(range.last) + " keys exceed the loop limit of " +
                     device_.info().name);
  const layouts::QueryStatsPush push{n,     s.tokens,    head / s.group(), range.first,
                                     range.last, float(gpu_.scale / std::log(2.0)), 0.9f};
  vk::Pass pass(device_);
  pass.dispatch(kernel_, {&queries_, &gpu_.keys, &probabilities_, &cosines_, &counts_}, push, n, 1, 1, "query_stats");
  pass.run();
  QueryStats stats;
  stats.cosine = cosines_.download_values<float>(n);
  stats.keys_for_90 = counts_.download_values<uint32_t>(n);
  stats.kept = kept_queries(stats.cosine, n_q);
  return stats;
}

}  // namespace kv
