#include "kernels/selection_metrics.h"

#include "../shaders/layouts.h"
#include "selection_metrics.spv.h"

namespace kv {

NeedleSpan needle_of(const Capture& capture) {
  if (auto span = capture.needle_span()) return {span->first, span->second};
  return {};
}

SelectionMetrics::SelectionMetrics(const vk::Device& device, const AttentionShape& shape)
    : shape_(shape),
      kernel_(device, "selection_metrics", selection_metrics_spirv, {7, sizeof(layouts::MetricsPush)},
              std::vector<uint32_t>{shape.dim}),
      metrics_(device, size_t(shape.heads) * 4 * sizeof(float)) {}

void SelectionMetrics::record(vk::Pass& pass, uint32_t n_queries, const Attention& dense, const Attention& sparse,
                              const vk::Buffer& selection, uint32_t selection_stride, uint32_t selection_heads_per_row,
                              const vk::Buffer& oracle, uint32_t oracle_stride, uint32_t oracle_heads_per_row,
                              NeedleSpan needle, uint32_t candidates) const {
  layouts::MetricsPush push{shape_.heads, n_queries,  selection_stride, selection_heads_per_row, oracle_stride,
                            oracle_heads_per_row, needle.first, needle.end, candidates};
  pass.dispatch(kernel_,
                {&dense.output_buffer(), &dense.log_sum_exp_buffer(), &sparse.output_buffer(),
                 &sparse.log_sum_exp_buffer(), &selection, &oracle, &metrics_},
                push, shape_.heads, 1, 1, "metrics");
}

std::vector<HeadMetrics> SelectionMetrics::read() const {
  std::vector<float> raw = metrics_.download_values<float>(size_t(shape_.heads) * 4);
  std::vector<HeadMetrics> heads(shape_.heads);
  for (uint32_t h = 0; h < shape_.heads; ++h) heads[h] = {raw[4 * h], raw[4 * h + 1], raw[4 * h + 2], raw[4 * h + 3]};
  return heads;
}

}  // namespace kv
