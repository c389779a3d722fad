#pragma once
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>

#include "io/capture.h"
#include "kernels/element_type.h"
#include "vk/kernel.h"

namespace kv {

// A method kernel specialised for the layer: constant 0 = head dimension,
// 1 = element type of the stored tensors, then `extra`.
template <typename Push>
vk::Kernel make_layer_kernel(const vk::Device& device, const char* name, std::span<const uint32_t> spirv,
                             uint32_t bindings, const AttentionShape& shape, DType dtype,
                             std::initializer_list<uint32_t> extra = {}) {
  std::vector<uint32_t> specialization{shape.dim, element_type(dtype)};
  specialization.insert(specialization.end(), extra);
  return vk::Kernel(device, name, spirv, {bindings, sizeof(Push)}, specialization);
}

inline uint32_t ceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

// Loop limits (vk::DeviceInfo::loop_limit, lavapipe's 65535): a kernel whose
// loops grow with its input counts their iterations, exit tests included, and
// leaves kLoopMargin of the limit to the loops around the counted ones.
constexpr uint32_t kLoopMargin = 512;

// Whether an invocation's `iterations` fit the device's loop limit; always where it has none.
inline bool within_loop_limit(const vk::Device& device, uint64_t iterations) {
  const uint32_t limit = device.info().loop_limit;
  return limit == 0 || iterations + kLoopMargin <= limit;
}

// How many units of work of `iterations` each one invocation may do under the
// device's loop limit, after `fixed` iterations of its own (at least 1); 0
// where it has none.
inline uint32_t units_within_loop_limit(const vk::Device& device, uint64_t iterations, uint64_t fixed = 0) {
  const uint32_t limit = device.info().loop_limit;
  if (limit == 0) return 0;
  const uint64_t left = limit - kLoopMargin - std::min<uint64_t>(fixed, limit - kLoopMargin);
  return uint32_t(std::max<uint64_t>(1, left / iterations));
}

// Score kernels whose workgroups each walk tiles of 128 keys of one KV head
// (SparQ's, Loki's), so that what a workgroup loads first (the kept or
// projected queries of its pass) serves many tiles: at most this many a KV
// head by default, 1024 in all at 8 KV heads. The walkers deal the tiles out in
// turn (walker w takes tiles w, w + walkers, ...), so that a KV head's walkers
// read one stretch of keys together: a contiguous range each made SparQ's
// scores 168.7 us against 162.0 at 128k on the H100 (docs/perf-experiments.md).
constexpr uint32_t kTileWalkersPerKvHead = 128;

// Query heads these score kernels (and fier_approx_scores) take at a time,
// their HEADS_AT_ONCE; a group of them takes head_passes.
constexpr uint32_t kHeadsAtOnce = 4;
inline uint64_t head_passes(const AttentionShape& shape) { return ceil_div(shape.heads / shape.kv_heads, kHeadsAtOnce); }

// The walkers a KV head's `candidates` get, at most `per_kv_head`: more where
// a walk would take more than `max_tiles` (units_within_loop_limit of a tile's
// iterations; 0: no limit).
inline uint32_t tile_walkers(uint32_t candidates, uint32_t max_tiles, uint32_t per_kv_head = kTileWalkersPerKvHead) {
  const uint32_t tiles = ceil_div(candidates, 128), walkers = std::min(tiles, per_kv_head);
  return max_tiles == 0 ? walkers : std::max(walkers, ceil_div(tiles, max_tiles));
}

}  // namespace kv
