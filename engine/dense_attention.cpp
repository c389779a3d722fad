#include "dense_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attention_merge.spv.h"
#include "attention_partial.spv.h"
#include "element_type.h"

namespace kv {
namespace {

using layouts::AttentionMergePush;
using layouts::AttentionPartialPush;

constexpr uint32_t kMergeWorkgroup = 64;
// Enough workgroups to fill a large GPU several times over; splits beyond that
// only add merge work.
constexpr uint32_t kTargetWorkgroups = 1024;

uint32_t shared_bytes(uint32_t rows, uint32_t key_tile, uint32_t dim) {
  return 4 * (rows * dim + key_tile * (dim + 1) + rows * key_tile + 5 * rows);
}

uint32_t ceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

void check_dim(const AttentionShape& shape) {
  if (shape.dim == 0 || shape.dim % 8 != 0 || shape.dim > 512)
    throw InputError("head dimension d=" + std::to_string(shape.dim) + " is not supported (a multiple of 8, at most 512)");
}

vk::Kernel make_partial(const vk::Device& device, const AttentionShape& shape, DType dtype, const DenseTiling& t) {
  const uint32_t specialization[] = {shape.dim, element_type(dtype), t.rows, t.key_tile, t.workgroup};
  return vk::Kernel(device, "attention_partial", attention_partial_spirv,
                    {6, sizeof(AttentionPartialPush)}, specialization);
}

vk::Kernel make_merge(const vk::Device& device, const AttentionShape& shape) {
  const uint32_t specialization[] = {shape.dim, kMergeWorkgroup};
  return vk::Kernel(device, "attention_merge", attention_merge_spirv, {4, sizeof(AttentionMergePush)}, specialization);
}

}  // namespace

DenseTiling choose_dense_tiling(const AttentionShape& shape, uint32_t shared_memory_bytes, uint32_t n_queries,
                                uint32_t key_count) {
  check_dim(shape);
  DenseTiling t;
  const uint32_t group = shape.group();
  // Rows beyond group x queries would idle; the largest tile that fits shared memory otherwise.
  const uint32_t useful_rows = std::max<uint32_t>(1, std::min<uint64_t>(64, uint64_t(group) * n_queries));
  t.rows = 0;
  for (uint32_t key_tile : {32u, 16u, 8u}) {
    for (uint32_t rows = 64; rows >= 4; rows /= 2)
      if (shared_bytes(rows, key_tile, shape.dim) <= shared_memory_bytes && (rows <= useful_rows || rows == 4)) {
        t.rows = rows;
        break;
      }
    if (t.rows) {
      t.key_tile = key_tile;
      break;
    }
  }
  if (!t.rows) throw InputError("the device's shared memory cannot hold an attention tile for d=" + std::to_string(shape.dim));
  t.heads_per_block = std::min(group, t.rows);
  t.head_blocks = ceil_div(group, t.heads_per_block);
  t.queries_per_tile = std::max<uint32_t>(1, t.rows / t.heads_per_block);
  t.query_tiles = ceil_div(std::max<uint32_t>(1, n_queries), t.queries_per_tile);
  const uint32_t groups = t.query_tiles * shape.kv_heads * t.head_blocks;
  const uint32_t key_tiles = ceil_div(std::max<uint32_t>(1, key_count), t.key_tile);
  const uint32_t wanted_splits = std::clamp<uint32_t>(ceil_div(kTargetWorkgroups, groups), 1, key_tiles);
  t.split_keys = ceil_div(key_tiles, wanted_splits) * t.key_tile;
  t.splits = ceil_div(std::max<uint32_t>(1, key_count), t.split_keys);
  return t;
}

DenseAttention::DenseAttention(const vk::Device& device, const AttentionShape& shape, DType dtype,
                               std::span<const uint32_t> positions)
    : shape_(shape),
      dtype_(dtype),
      n_queries_(static_cast<uint32_t>(positions.size())),
      tiling_(choose_dense_tiling(shape, device.limits().maxComputeSharedMemorySize, n_queries_,
                                  positions.empty() ? 1 : *std::max_element(positions.begin(), positions.end()) + 1)),
      partial_(make_partial(device, shape, dtype, tiling_)),
      merge_(make_merge(device, shape)),
      queries_(device, size_t(shape.heads) * n_queries_ * shape.dim * dtype_size(dtype)),
      positions_(device, positions.size_bytes()),
      partial_output_(device, size_t(shape.heads) * n_queries_ * tiling_.splits * shape.dim * sizeof(float)),
      partial_stats_(device, size_t(shape.heads) * n_queries_ * tiling_.splits * 2 * sizeof(float)),
      output_(device, size_t(shape.heads) * n_queries_ * shape.dim * sizeof(float)),
      log_sum_exp_(device, size_t(shape.heads) * n_queries_ * sizeof(float)) {
  for (uint32_t p : positions)
    if (p >= shape.tokens)
      throw InputError("query position " + std::to_string(p) + " is past T=" + std::to_string(shape.tokens));
  positions_.upload(std::as_bytes(positions));
}

void DenseAttention::set_queries(std::span<const std::byte> queries) { queries_.upload(queries); }

void DenseAttention::poison() {
  const uint32_t nan = 0x7fc00000u;
  for (vk::Buffer* b : {&partial_output_, &partial_stats_, &output_, &log_sum_exp_}) b->fill(nan);
}

void DenseAttention::record(vk::Pass& pass, const GpuLayer& layer) const {
  if (n_queries_ == 0) return;
  const DenseTiling& t = tiling_;
  AttentionPartialPush partial{};
  partial.n_heads = shape_.heads;
  partial.n_kv_heads = shape_.kv_heads;
  partial.n_tokens = shape_.tokens;
  partial.n_queries = n_queries_;
  partial.queries_per_tile = t.queries_per_tile;
  partial.heads_per_block = t.heads_per_block;
  partial.head_blocks = t.head_blocks;
  partial.split_keys = t.split_keys;
  partial.n_splits = t.splits;
  partial.scale_log2 = float(layer.scale / std::log(2.0));
  pass.dispatch(partial_, {&queries_, &layer.keys, &layer.values, &positions_, &partial_output_, &partial_stats_},
                partial, t.splits, t.query_tiles, shape_.kv_heads * t.head_blocks, "dense_partial");
  AttentionMergePush merge{shape_.heads * n_queries_, t.splits};
  pass.dispatch(merge_, {&partial_output_, &partial_stats_, &output_, &log_sum_exp_}, merge, merge.n_rows, 1, 1,
                "dense_merge");
}

std::vector<float> DenseAttention::output() const {
  return output_.download_values<float>(size_t(shape_.heads) * n_queries_ * shape_.dim);
}

std::vector<float> DenseAttention::log_sum_exp() const {
  return log_sum_exp_.download_values<float>(size_t(shape_.heads) * n_queries_);
}

}  // namespace kv
