#pragma once
// Room kernels/: the GPU kernels over one layer that methods and models share
// (attention, top-k, query statistics, selection metrics, the layer on the GPU); it includes base/, vk/ and io/.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/gpu_layer.h"
#include "vk/kernel.h"
#include "vk/pass.h"

namespace kv {

// How attention_partial (or attention_decode) cuts the work. `rows`,
// `key_tile` and `workgroup` are specialization constants chosen once (from
// the device's shared memory, or its subgroup size for attention_decode); the
// rest is chosen per request.
struct AttentionTiling {
  uint32_t rows = 16;      // (head, query) rows per workgroup
  uint32_t key_tile = 32;  // key slots staged in shared memory at a time
  uint32_t workgroup = 128;
  uint32_t heads_per_block = 1;
  uint32_t head_blocks = 1;
  uint32_t queries_per_tile = 1;
  uint32_t query_tiles = 1;
  uint32_t split_keys = 0;
  uint32_t splits = 1;
  bool decode_kernel = false;  // attention_decode: one query, keys in registers
  bool chunk_kernel = false;   // attention_chunk: cooperative matrices
  bool cooperative_matrix2 = false;  // the chunk kernel is attention_chunk_cm2 (VK_NV_cooperative_matrix2)
  bool outputs_in_shared = false;  // attention_tile's accumulators in shared memory (*_shared_outputs)
};

// One attention step: the queries at positions [first_position, first_position + n_queries),
// each head's queries contiguous in `queries` [H, n_queries, d] (storage dtype).
struct AttentionRequest {
  const vk::Buffer* queries = nullptr;
  uint32_t n_queries = 0;
  uint32_t first_position = 0;
  // Sparse attention only: key lists [H / heads_per_list, list_length] of ascending
  // positions padded with -1, read in place, then the own keys
  // [own_first, own_first + own_count) under the causal mask.
  const vk::Buffer* selection = nullptr;
  uint32_t heads_per_list = 0;
  uint32_t list_length = 0;
  uint32_t own_first = 0;
  uint32_t own_count = 0;
};

// Causal attention on the GPU in two stages: `<prefix>_partial` splits the key
// slots (flash-decoding), `<prefix>_merge` combines the splits. For one
// query (decode) on a device with subgroup shuffles, the partial stage is
// attention_decode (keys and values in registers); for chunks, attention_chunk
// (cooperative matrices) where the device has them and the keys are fp16;
// otherwise the shared-memory tile kernel attention_partial. Dense reads keys
// [0, position]; sparse reads the request's key lists. Outputs, per (head,
// query): the attention output [H, n, d] and the log-sum-exp of the scaled
// logits over the attended keys [H, n].
class Attention {
 public:
  enum class Keys { dense, sparse };
  // Where the tile kernel keeps its rows' output accumulators: as the device
  // prefers (in shared memory where values kept across barriers are costly to
  // compile, vk::DeviceInfo::costly_values_across_barriers; else registers),
  // or in registers, the GPUs' form, which tests hold to the reference there too.
  enum class TileOutputs { device_default, registers };
  // A chunk's kernel: as the engine chooses (kernel_choice.h), or
  // attention_chunk_cm2 where the device has VK_NV_cooperative_matrix2 and
  // the shape allows it, whatever the choice (its tests).
  enum class ChunkKernel { device_default, cooperative_matrix2 };

  Attention(const vk::Device& device, const AttentionShape& shape, DType dtype, Keys keys, uint32_t max_queries,
            TileOutputs tile_outputs = TileOutputs::device_default, ChunkKernel chunk_kernel = ChunkKernel::device_default);

  // The buffers bound here must outlive every run of the pass.
  void record(vk::Pass& pass, const GpuLayer& layer, const AttentionRequest& request, const std::string& prefix) const;
  // Fills outputs and scratch with NaN, so a kernel that skips an element shows.
  void poison();

  AttentionTiling tiling(const AttentionRequest& request) const;
  const vk::Buffer& output_buffer() const { return output_; }
  const vk::Buffer& log_sum_exp_buffer() const { return log_sum_exp_; }
  std::vector<float> output(uint32_t n_queries) const;
  std::vector<float> log_sum_exp(uint32_t n_queries) const;

 private:
  AttentionShape shape_;
  Keys keys_;
  uint32_t max_queries_;
  AttentionTiling base_;
  uint32_t most_tiles_per_split_;  // the tile kernel's key tiles a split may hold (loop limit); 0 = any
  // attention_chunk's tile for requests of more than one query, where the
  // device and the shape allow it (chunk_tiling); else those use partial_.
  std::optional<AttentionTiling> chunk_tiling_;
  uint32_t partial_rows_;  // queries x splits the partial buffers hold per head
  vk::Kernel partial_;
  uint32_t decode_lanes_ = 0;  // lanes per key in attention_decode; 0 where it is not used
  // attention_decode by the heads a workgroup serves (1 or min(group, 8)); empty
  // where it is not used.
  std::map<uint32_t, vk::Kernel> decode_;
  std::optional<vk::Kernel> chunk_;  // attention_chunk, where chunk_tiling_ is set
  vk::Kernel merge_;
  vk::Kernel merge_few_;  // rows of at most ATTENTION_FEW_SPLITS splits
  vk::Buffer partial_output_;
  vk::Buffer partial_stats_;
  vk::Buffer output_;
  vk::Buffer log_sum_exp_;
  vk::Buffer split_count_;  // finished splits per (list, head block) of a self-merging decode step; zero between steps
};

}  // namespace kv
