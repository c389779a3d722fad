#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "attention_chunk.spv.h"
#include "attention_chunk_cm2.spv.h"
#include "attention_chunk_khr.spv.h"
#include "attention_decode.spv.h"
#include "attention_merge.spv.h"
#include "attention_merge_few.spv.h"
#include "attention_partial.spv.h"
#include "attention_partial_shared_outputs.spv.h"
#include "base/error.h"
#include "kernels/element_type.h"
#include "kernels/fragment_layout.h"
#include "kernels/kernel_choice.h"
#include "kernels/layer_kernel.h"
#include "sparse_attention_chunk.spv.h"
#include "sparse_attention_chunk_cm2.spv.h"
#include "sparse_attention_chunk_khr.spv.h"
#include "sparse_attention_decode.spv.h"
#include "sparse_attention_partial.spv.h"
#include "sparse_attention_partial_shared_outputs.spv.h"

namespace kv {
namespace {

using layouts::AttentionMergePush;
using layouts::AttentionPartialPush;

constexpr uint32_t kMergeWorkgroup = 256;  // at least HEAD_DIM / 4: an invocation per 4 channels
constexpr uint32_t kMergeBatch = 8;        // merge_splits.glsl's MERGE_BATCH
constexpr uint32_t kMergeFewWorkgroup = 128;  // attention_merge_few: at least HEAD_DIM / 4, a row per d / 4 invocations
// Enough workgroups to fill a large GPU several times over; more splits only add merge work.
constexpr uint32_t kTargetWorkgroups = 1024;
// Queries x splits of the partial buffers: a decode step may split 256 ways, a
// chunk on attention_tile 2 ways (only the chunk kernel's splits were measured
// again since); attention_chunk's splits aim for kChunkTargetWorkgroups.
constexpr uint32_t kPartialRowsPerHead = 256;
constexpr uint32_t kTileChunkSplits = 2;
// attention_chunk aims for about one workgroup per SM of a large GPU: on the
// H100 (132 SMs) a 32k dense chunk took 1034 us at 2 or 4 splits of 4-subgroup
// workgroups, QuoKA's 1152-key chunk 70.6 / 82 / 100 / 133 us at 2 / 4 / 8 / 16
// (docs/perf-experiments.md); with 8 subgroups, 4 splits beat 2 and 8.
constexpr uint32_t kChunkTargetWorkgroups = 128;

// attention_decode: key groups per workgroup, keys each group loads before using
// any (the shader's UNROLL), and the most heads one workgroup serves (each adds
// registers for its query and output channels). Measured on the H100
// (docs/perf.md): 2 keys with 512 workgroups beat 4 or 8 keys, 1024 or 2048.
constexpr uint32_t kDecodeKeyGroups = 8;
constexpr uint32_t kDecodeUnroll = 2;
constexpr uint32_t kDecodeMaxRows = 8;
// Workgroups a decode step aims for, and the fewest key slots worth a split:
// every split pays for combining its key groups, and the merge reads each split.
// A sparse step's short lists (2048 keys) gain from twice the workgroups (H100:
// 20.3 -> 16.5 us at 32 splits of a list), dense decode loses (the merge of 128
// splits: 7 -> 13 us); docs/perf-experiments.md.
constexpr uint32_t kDecodeTargetWorkgroups = 512;
constexpr uint32_t kSparseDecodeTargetWorkgroups = 1024;
constexpr uint32_t kDecodeMinSplitKeys = 32;

// Keys a group loads before using any: fewer where many heads share a workgroup,
// whose queries and outputs take the registers.
uint32_t decode_unroll(uint32_t rows) { return rows > 4 ? std::max<uint32_t>(1, kDecodeUnroll / 2) : kDecodeUnroll; }

// Lanes per key in attention_decode: one 16-byte piece of the row each, at most a subgroup.
uint32_t decode_lanes(const vk::Device& device, uint32_t dim) {
  uint32_t lanes = 1;
  while (lanes < dim / 8 && lanes < device.info().subgroup_size) lanes *= 2;
  return lanes;
}

// Whether chunks run attention_chunk_cm2 (VK_NV_cooperative_matrix2): fp16
// keys and values, d a multiple of 16 and at most 256 (Q and O are matrices
// of ROWS x d a workgroup).
bool cooperative_matrix2_chunks(const vk::Device& device, DType dtype, uint32_t dim, Attention::ChunkKernel choice) {
  const bool chosen = choice == Attention::ChunkKernel::cooperative_matrix2
                          ? device.cooperative_matrix2() && cooperative_matrix2_built()
                          : matrix_kernels(device) == MatrixKernels::cooperative_matrix2;
  return chosen && dtype == DType::f16 && dim % 16 == 0 && dim <= 256;
}

// attention_chunk's tile, 16 (head, query) rows a subgroup of 32, where the
// device and shape allow the kernel: fp16 keys and values, d a multiple of 32
// (pairs of 16-wide fragments) and at most 128 (the outputs' fragments live in
// registers), and fragments laid out as its softmax assumes
// (has_mma_fragment_layout). Eight subgroups share each staged key tile where
// shared memory holds them (38,016 bytes at d = 128), four otherwise. On the
// H100 eight took the 32k dense chunk from 1014 to 675 us and QuoKA's sparse
// chunk from 58.8 to 40.0 (docs/perf-experiments.md).
std::optional<AttentionTiling> chunk_tiling(const vk::Device& device, DType dtype, uint32_t dim,
                                           Attention::ChunkKernel choice) {
  if (cooperative_matrix2_chunks(device, dtype, dim, choice)) {
    // KVSCOPE_CM2_ATTENTION=rows,key_tile,invocations: a tile to try (tools/dev/README.md).
    AttentionTiling t{.rows = 128, .key_tile = 64, .workgroup = 256, .chunk_kernel = true, .cooperative_matrix2 = true};
    if (const char* forced = std::getenv("KVSCOPE_CM2_ATTENTION"))
      std::sscanf(forced, "%u,%u,%u", &t.rows, &t.key_tile, &t.workgroup);
    const std::vector<uint32_t>& sizes = device.info().cooperative_matrix2_workgroups;
    if (std::find(sizes.begin(), sizes.end(), t.workgroup) == sizes.end()) t.workgroup = sizes.back();
    return t;
  }
  if (!device.info().cooperative_matrix || dtype != DType::f16 || dim % 32 != 0 || dim > 128 ||
      !has_mma_fragment_layout(device))
    return std::nullopt;
  const uint32_t key_tile = ATTENTION_CHUNK_KEY_TILE;
  for (uint32_t subgroups : {8u, 4u}) {
    const uint32_t shared = 16 * 2 * key_tile * (dim / 8 + 1) + 4 * subgroups * 16 * ATTENTION_CHUNK_S_STRIDE + 4 * key_tile;
    if (shared <= device.limits().maxComputeSharedMemorySize)
      return AttentionTiling{.rows = 16 * subgroups, .key_tile = key_tile, .workgroup = 32 * subgroups, .chunk_kernel = true};
  }
  return std::nullopt;
}

uint32_t shared_bytes(uint32_t rows, uint32_t key_tile, uint32_t dim, bool outputs_in_shared) {
  return 4 * (rows * dim * (outputs_in_shared ? 2 : 1) + key_tile * (dim + 1) + rows * key_tile + 5 * rows + key_tile);
}

// The largest tile that fits shared memory, no larger than the rows a request
// can fill; with its outputs in shared memory where the device asks for that
// (costly_values_across_barriers) and a tile of them fits. That form takes
// the largest tile whatever the request, so that requests of every size
// share one pipeline: each costs lavapipe a compile, and the rows a request
// leaves empty cost it little (no key is causal for them).
AttentionTiling choose_base_tiling(const AttentionShape& shape, const vk::Device& device, uint32_t max_queries,
                                   Attention::TileOutputs tile_outputs) {
  if (shape.dim == 0 || shape.dim % 8 != 0 || shape.dim > 512)
    throw InputError("head dimension d=" + std::to_string(shape.dim) + " is not supported (a multiple of 8, at most 512)");
  const uint32_t useful_rows = std::max<uint32_t>(1, std::min<uint64_t>(64, uint64_t(shape.group()) * max_queries));
  const uint32_t shared_memory_bytes = device.limits().maxComputeSharedMemorySize;
  AttentionTiling t;
  for (bool outputs_in_shared : {true, false}) {
    if (outputs_in_shared && (tile_outputs == Attention::TileOutputs::registers ||
                              !device.info().costly_values_across_barriers))
      continue;
    for (uint32_t key_tile : {32u, 16u, 8u})
      for (uint32_t rows = 64; rows >= 4; rows /= 2)
        if (shared_bytes(rows, key_tile, shape.dim, outputs_in_shared) <= shared_memory_bytes &&
            (rows <= useful_rows || rows == 4 || outputs_in_shared)) {
          t.rows = rows;
          t.key_tile = key_tile;
          t.outputs_in_shared = outputs_in_shared;
          return t;
        }
  }
  throw InputError("the device's shared memory cannot hold an attention tile for d=" + std::to_string(shape.dim));
}

// Loop iterations attention_tile.glsl completes per key tile (each loop also
// counts its exit test; none is taken as unrolled, so this is an upper bound).
// Under a loop limit (vk::DeviceInfo::loop_limit) a split holds at most the
// tiles units_within_loop_limit allows. Without that bound, lavapipe ended
// dense prefill over 8k keys (128 tiles a split) after about 60 tiles and
// returned wrong outputs (docs/perf-experiments.md).
uint32_t tile_loop_iterations(const AttentionTiling& t, uint32_t dim) {
  const auto loop = [&](uint32_t items) { return ceil_div(items, t.workgroup) + 1; };
  const auto per_invocation = [&](uint32_t items) { return ceil_div(items, t.workgroup); };
  const uint32_t staging = loop(t.key_tile) + 2 * (loop(t.key_tile * (dim / 8)) + per_invocation(t.key_tile * (dim / 8)) * 5);
  const uint32_t scores = loop(t.rows * t.key_tile) + per_invocation(t.rows * t.key_tile) * (dim + 1);
  const uint32_t softmax = loop(t.rows) + per_invocation(t.rows) * 2 * (t.key_tile + 1);
  const uint32_t outputs = per_invocation(t.rows * dim) + 1 + per_invocation(t.rows * dim) * (t.key_tile + 1);
  return 1 + staging + scores + softmax + outputs;
}

// Queries x splits of the partial buffers per head: enough for a decode step's
// splits, attention_tile's chunk splits and those its loop limit asks for, and
// attention_chunk's (`chunk`, where it runs).
uint32_t partial_rows(const AttentionShape& shape, uint32_t max_queries, const AttentionTiling& base,
                      uint32_t most_tiles, const std::optional<AttentionTiling>& chunk) {
  const uint64_t most_slots = uint64_t(shape.tokens) + max_queries;  // a sparse list and the chunk's own keys
  const uint64_t most_key_tiles = (most_slots + base.key_tile - 1) / base.key_tile;
  const uint64_t loop_splits = most_tiles == 0 ? 1 : (most_key_tiles + most_tiles - 1) / most_tiles;
  const uint64_t splits = std::max<uint64_t>(kTileChunkSplits, loop_splits);
  if (splits > kPartialRowsPerHead)
    throw InputError(std::to_string(shape.tokens) + " tokens need " + std::to_string(splits) +
                     " attention splits on this device (its loop limit), more than " + std::to_string(kPartialRowsPerHead));
  uint32_t rows = std::max<uint32_t>(kPartialRowsPerHead, max_queries * uint32_t(splits));
  // attention_chunk's workgroups cover a chunk's H x n rows in tiles of
  // chunk->rows, so at least H n / rows of them, and its ceil(target / groups)
  // splits give a head at most n (target rows / (H n) + 1) partial rows.
  if (chunk) rows = std::max(rows, kChunkTargetWorkgroups * chunk->rows / shape.heads + max_queries);
  return rows;
}

}  // namespace

Attention::Attention(const vk::Device& device, const AttentionShape& shape, DType dtype, Keys keys,
                     uint32_t max_queries, TileOutputs tile_outputs, ChunkKernel chunk_kernel)
    : shape_(shape),
      keys_(keys),
      max_queries_(std::max<uint32_t>(1, max_queries)),
      base_(choose_base_tiling(shape, device, max_queries_, tile_outputs)),
      most_tiles_per_split_(units_within_loop_limit(device, tile_loop_iterations(base_, shape.dim))),
      chunk_tiling_(max_queries_ > 1 ? chunk_tiling(device, dtype, shape.dim, chunk_kernel) : std::nullopt),
      partial_rows_(partial_rows(shape, max_queries_, base_, most_tiles_per_split_, chunk_tiling_)),
      partial_([&] {
        const uint32_t specialization[] = {shape.dim, element_type(dtype), base_.rows, base_.key_tile, base_.workgroup};
        if (keys == Keys::dense)
          return base_.outputs_in_shared
                     ? vk::Kernel(device, "attention_partial_shared_outputs", attention_partial_shared_outputs_spirv,
                                  {5, sizeof(AttentionPartialPush)}, specialization)
                     : vk::Kernel(device, "attention_partial", attention_partial_spirv, {5, sizeof(AttentionPartialPush)},
                                  specialization);
        return base_.outputs_in_shared
                   ? vk::Kernel(device, "sparse_attention_partial_shared_outputs",
                                sparse_attention_partial_shared_outputs_spirv, {6, sizeof(AttentionPartialPush)},
                                specialization)
                   : vk::Kernel(device, "sparse_attention_partial", sparse_attention_partial_spirv,
                                {6, sizeof(AttentionPartialPush)}, specialization);
      }()),
      // Every attention that may serve one query has the decode kernel: the
      // model's serves its prefill chunks and its decode steps, and its steps
      // on the tile kernel took 1.5x the bench's (79.8 against 53.3 us a layer at
      // 32k on the H100, docs/perf.md).
      decode_lanes_(device.info().subgroup_shuffle ? decode_lanes(device, shape.dim) : 0),
      decode_([&] {
        std::map<uint32_t, vk::Kernel> kernels;
        if (decode_lanes_ == 0) return kernels;
        std::vector<uint32_t> rows{std::min(shape.group(), kDecodeMaxRows)};
        if (keys == Keys::sparse && rows[0] > 1) rows.push_back(1);  // lists per query head
        for (uint32_t r : rows) {
          const uint32_t specialization[] = {shape.dim, element_type(dtype), r, decode_lanes_,
                                             kDecodeKeyGroups * decode_lanes_, decode_unroll(r)};
          kernels.emplace(r, keys == Keys::dense ? vk::Kernel(device, "attention_decode", attention_decode_spirv,
                                                              {8, sizeof(AttentionPartialPush)}, specialization)
                                                 : vk::Kernel(device, "sparse_attention_decode",
                                                              sparse_attention_decode_spirv,
                                                              {9, sizeof(AttentionPartialPush)}, specialization));
        }
        return kernels;
      }()),
      chunk_([&]() -> std::optional<vk::Kernel> {
        if (!chunk_tiling_) return std::nullopt;
        if (chunk_tiling_->cooperative_matrix2) {
          const uint32_t specialization[] = {shape.dim, element_type(dtype), chunk_tiling_->rows, chunk_tiling_->workgroup,
                                             chunk_tiling_->key_tile};
          if (keys == Keys::dense)
            return vk::Kernel(device, "attention_chunk_cm2", attention_chunk_cm2_spirv, {5, sizeof(AttentionPartialPush)},
                              specialization);
          return vk::Kernel(device, "sparse_attention_chunk_cm2", sparse_attention_chunk_cm2_spirv,
                            {6, sizeof(AttentionPartialPush)}, specialization);
        }
        const uint32_t specialization[] = {shape.dim, element_type(dtype), chunk_tiling_->workgroup / 32,
                                           chunk_tiling_->workgroup};
        if (keys == Keys::dense)
          return vk::Kernel(device, "attention_chunk",
                            vk::cooperative_matrix_spirv(device, attention_chunk_spirv, attention_chunk_khr_spirv),
                            {5, sizeof(AttentionPartialPush)}, specialization);
        return vk::Kernel(device, "sparse_attention_chunk",
                          vk::cooperative_matrix_spirv(device, sparse_attention_chunk_spirv, sparse_attention_chunk_khr_spirv),
                          {6, sizeof(AttentionPartialPush)}, specialization);
      }()),
      merge_([&] {
        const uint32_t specialization[] = {shape.dim, kMergeWorkgroup};
        return vk::Kernel(device, "attention_merge", attention_merge_spirv, {4, sizeof(AttentionMergePush)}, specialization);
      }()),
      merge_few_([&] {
        const uint32_t specialization[] = {shape.dim, kMergeFewWorkgroup};
        return vk::Kernel(device, "attention_merge_few", attention_merge_few_spirv, {4, sizeof(AttentionMergePush)},
                          specialization);
      }()),
      partial_output_(device, size_t(shape.heads) * partial_rows_ * shape.dim * sizeof(float)),
      partial_stats_(device, size_t(shape.heads) * partial_rows_ * 2 * sizeof(float)),
      output_(device, size_t(shape.heads) * max_queries_ * shape.dim * sizeof(float)),
      log_sum_exp_(device, size_t(shape.heads) * max_queries_ * sizeof(float)),
      split_count_(device, size_t(shape.heads) * sizeof(uint32_t)) {
  split_count_.fill(0);
}

AttentionTiling Attention::tiling(const AttentionRequest& request) const {
  AttentionTiling t = base_;
  const uint32_t heads_per_list = keys_ == Keys::dense ? shape_.group() : request.heads_per_list;
  const uint32_t slots = keys_ == Keys::dense ? request.first_position + request.n_queries
                                              : request.list_length + request.own_count;
  const uint32_t decode_rows = std::min(heads_per_list, kDecodeMaxRows);
  if (request.n_queries == 1 && decode_.count(decode_rows)) {
    t.decode_kernel = true;
    t.rows = decode_rows;
    t.workgroup = kDecodeKeyGroups * decode_lanes_;
    t.key_tile = kDecodeKeyGroups * decode_unroll(t.rows);  // slots one pass of the key loop covers
    t.heads_per_block = t.rows;
    t.head_blocks = ceil_div(heads_per_list, t.rows);
    const uint32_t groups = (shape_.heads / heads_per_list) * t.head_blocks;
    const uint32_t passes = ceil_div(std::max<uint32_t>(1, slots), t.key_tile);
    const uint32_t most = std::min(ceil_div(std::max<uint32_t>(1, slots), kDecodeMinSplitKeys), partial_rows_);
    const uint32_t target = keys_ == Keys::sparse ? kSparseDecodeTargetWorkgroups : kDecodeTargetWorkgroups;
    const uint32_t wanted = std::clamp<uint32_t>(ceil_div(target, groups), 1, most);
    // A split's share of the slots; the kernel deals its passes out in turn.
    t.split_keys = ceil_div(passes, wanted) * t.key_tile;
    t.splits = ceil_div(std::max<uint32_t>(1, slots), t.split_keys);
    return t;
  }
  if (chunk_tiling_) t = *chunk_tiling_;
  t.heads_per_block = std::min(heads_per_list, t.rows);
  t.head_blocks = ceil_div(heads_per_list, t.heads_per_block);
  t.queries_per_tile = std::max<uint32_t>(1, t.rows / t.heads_per_block);
  t.query_tiles = ceil_div(std::max<uint32_t>(1, request.n_queries), t.queries_per_tile);
  const uint32_t groups = t.query_tiles * (shape_.heads / heads_per_list) * t.head_blocks;
  const uint32_t key_tiles = ceil_div(std::max<uint32_t>(1, slots), t.key_tile);
  const uint32_t split_cap = std::max<uint32_t>(1, partial_rows_ / std::max<uint32_t>(1, request.n_queries));
  const uint32_t target = t.chunk_kernel ? kChunkTargetWorkgroups : kTargetWorkgroups;
  uint32_t wanted = std::clamp<uint32_t>(ceil_div(target, groups), 1, std::min(key_tiles, split_cap));
  if (!t.chunk_kernel && most_tiles_per_split_ != 0) {
    const uint32_t loop_splits = ceil_div(key_tiles, most_tiles_per_split_);
    if (loop_splits > split_cap)  // partial_rows_ counts lists as long as T plus the chunk
      throw InputError("a key list of " + std::to_string(slots) + " slots needs " + std::to_string(loop_splits) +
                       " attention splits on this device (its loop limit), more than the " + std::to_string(split_cap) +
                       " its buffers hold for " + std::to_string(request.n_queries) + " queries");
    wanted = std::max(wanted, loop_splits);
  }
  t.split_keys = ceil_div(key_tiles, wanted) * t.key_tile;
  t.splits = ceil_div(std::max<uint32_t>(1, slots), t.split_keys);
  return t;
}

void Attention::poison() {
  for (vk::Buffer* b : {&partial_output_, &partial_stats_, &output_, &log_sum_exp_}) b->fill(0x7fc00000u);
}

void Attention::record(vk::Pass& pass, const GpuLayer& layer, const AttentionRequest& request,
                       const std::string& prefix) const {
  if (request.n_queries == 0) return;
  if (request.n_queries > max_queries_)
    throw std::logic_error("Attention: " + std::to_string(request.n_queries) + " queries, built for " + std::to_string(max_queries_));
  if (request.first_position + request.n_queries > shape_.tokens)
    throw InputError("query positions up to " + std::to_string(request.first_position + request.n_queries - 1) +
                     " are past T=" + std::to_string(shape_.tokens));
  const bool sparse = keys_ == Keys::sparse;
  if (sparse && (!request.selection || request.heads_per_list == 0 || shape_.heads % request.heads_per_list != 0))
    throw std::logic_error("Attention: a sparse request needs key lists");
  const AttentionTiling t = tiling(request);
  AttentionPartialPush push{};
  push.n_heads = shape_.heads;
  push.n_kv_heads = shape_.kv_heads;
  push.n_tokens = shape_.tokens;
  push.n_queries = request.n_queries;
  push.first_position = request.first_position;
  push.queries_per_tile = t.queries_per_tile;
  push.heads_per_list = sparse ? request.heads_per_list : shape_.group();
  push.heads_per_block = t.heads_per_block;
  push.head_blocks = t.head_blocks;
  push.split_keys = t.split_keys;
  push.n_splits = t.splits;
  push.scale_log2 = float(layer.scale / std::log(2.0));
  push.list_length = request.list_length;
  push.own_first = request.own_first;
  push.own_count = request.own_count;
  const uint32_t lists = shape_.heads / push.heads_per_list;
  const vk::Kernel& partial = t.decode_kernel ? decode_.at(t.rows) : t.chunk_kernel ? *chunk_ : partial_;
  // A decode list of one head whose splits one round of merge_row's loads
  // covers is merged by its last split to finish (attention_decode.glsl).
  const uint32_t merge_groups = t.workgroup / (shape_.dim / 4);
  const bool merge_here = t.decode_kernel && t.rows == 1 && t.splits <= merge_groups * kMergeBatch;
  push.merge_here = merge_here ? 1 : 0;
  if (t.decode_kernel && sparse)
    pass.dispatch(partial, {request.queries, &layer.keys, &layer.values, &partial_output_, &partial_stats_, request.selection,
                            &split_count_, &output_, &log_sum_exp_},
                  push, t.splits, t.query_tiles, lists * t.head_blocks, prefix + "_partial");
  else if (t.decode_kernel)
    pass.dispatch(partial, {request.queries, &layer.keys, &layer.values, &partial_output_, &partial_stats_, &split_count_,
                            &output_, &log_sum_exp_},
                  push, t.splits, t.query_tiles, lists * t.head_blocks, prefix + "_partial");
  else if (sparse)
    pass.dispatch(partial, {request.queries, &layer.keys, &layer.values, &partial_output_, &partial_stats_, request.selection},
                  push, t.splits, t.query_tiles, lists * t.head_blocks, prefix + "_partial");
  else
    pass.dispatch(partial, {request.queries, &layer.keys, &layer.values, &partial_output_, &partial_stats_}, push,
                  t.splits, t.query_tiles, lists * t.head_blocks, prefix + "_partial");
  if (merge_here) return;
  AttentionMergePush merge{shape_.heads * request.n_queries, t.splits};
  // A chunk's few splits: each invocation combines its channel alone (H100, QuoKA
  // prefill chunk: 15.7 -> 8.0 us against a workgroup per row).
  const bool few = t.splits <= ATTENTION_FEW_SPLITS;
  const uint32_t workgroups = few ? ceil_div(merge.n_rows, kMergeFewWorkgroup / (shape_.dim / 4)) : merge.n_rows;
  pass.dispatch(few ? merge_few_ : merge_, {&partial_output_, &partial_stats_, &output_, &log_sum_exp_}, merge,
                workgroups, 1, 1, prefix + "_merge");
}

std::vector<float> Attention::output(uint32_t n_queries) const {
  return output_.download_values<float>(size_t(shape_.heads) * n_queries * shape_.dim);
}

std::vector<float> Attention::log_sum_exp(uint32_t n_queries) const {
  return log_sum_exp_.download_values<float>(size_t(shape_.heads) * n_queries);
}

}  // namespace kv
