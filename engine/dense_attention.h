#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "gpu_layer.h"
#include "vk/kernel.h"
#include "vk/pass.h"

namespace kv {

// How attention_partial cuts the work; chosen from the device's shared memory.
struct DenseTiling {
  uint32_t rows = 16;      // (head, query) rows per workgroup
  uint32_t key_tile = 32;  // keys staged in shared memory at a time
  uint32_t workgroup = 128;
  uint32_t heads_per_block = 1;
  uint32_t head_blocks = 1;
  uint32_t queries_per_tile = 1;
  uint32_t query_tiles = 1;
  uint32_t split_keys = 0;
  uint32_t splits = 1;
};

DenseTiling choose_dense_tiling(const AttentionShape& shape, uint32_t shared_memory_bytes, uint32_t n_queries,
                                uint32_t key_count);

// Dense causal attention of the queries at `positions` (each attends to keys
// [0, position]) on the GPU: stage `dense_partial` splits the keys
// (flash-decoding), stage `dense_merge` combines the splits. Decode probes and
// prefill chunks are both lists of positions. Outputs, per (head, query):
// the attention output [H, n, d] and the log-sum-exp of the scaled logits [H, n].
class DenseAttention {
 public:
  DenseAttention(const vk::Device& device, const AttentionShape& shape, DType dtype,
                 std::span<const uint32_t> positions);

  // Queries as [H, n, d] in the layer's dtype (see gather_queries).
  void set_queries(std::span<const std::byte> queries);
  // Fills outputs and scratch with NaN, so a kernel that skips an element shows.
  void poison();
  // The buffers bound here must outlive every run of the pass.
  void record(vk::Pass& pass, const GpuLayer& layer) const;

  const DenseTiling& tiling() const { return tiling_; }
  const vk::Buffer& output_buffer() const { return output_; }
  const vk::Buffer& log_sum_exp_buffer() const { return log_sum_exp_; }
  std::vector<float> output() const;
  std::vector<float> log_sum_exp() const;

 private:
  AttentionShape shape_;
  DType dtype_;
  uint32_t n_queries_;
  DenseTiling tiling_;
  vk::Kernel partial_;
  vk::Kernel merge_;
  vk::Buffer queries_;
  vk::Buffer positions_;
  vk::Buffer partial_output_;
  vk::Buffer partial_stats_;
  vk::Buffer output_;
  vk::Buffer log_sum_exp_;
};

}  // namespace kv
