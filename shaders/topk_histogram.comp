#version 460
// Level 0 of a long row's radix select, one or more slices of TOPK_SLICE
// scores per workgroup (workgroup_tiles), one after another: the histogram of
// their keys over the row's level-0 window, added to the row's histogram in
// memory (topk_finish clears it after use). Several slices a workgroup keep a
// dispatch within one wave of resident workgroups (engine/topk.cpp); each
// workgroup finds the window once. Loading the next slice while one was
// binned was no faster on the H100 (docs/perf.md, session 20).
//
// The window comes from a strided sample of the row, the same in every
// workgroup: it ends at the sample's largest key and starts near its r-th
// largest, r twice the sample's expected share of the k plus 16 (at the edge
// of r's 11-bit leading-bits bin, not below the sample's smallest key), so
// that the bins are fine around the k-th largest key whatever the row's sign
// and spread: bins from the sample's smallest key could be as wide as a
// quarter of T, too many keys for topk_finish when T fell in a wide one
// (Loki's rows at 128k, docs/perf.md, session 11). The bins are a power of
// two wide, about 1/1024 of the window, from a multiple of their width, so
// that an inner bin is a radix prefix; keys outside the window (or in its last
// partial bin) land in the first or last bin, which are open-ended. One key an
// invocation: a sample of 1024, four an invocation, each from its own sector,
// cost Fier's long rows 2.3 us more at 128k on the H100 (docs/perf.md, session 18).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(std430, binding = 0) readonly buffer Scores { vec4 scores[]; };  // [rows, row_stride] floats
layout(std430, binding = 1) buffer SelectState { uint select_state[]; };  // [rows, TOPK_STATE_WORDS]

#define TOPK_WORKGROUP 256
#define TOPK_VECTORS 4u
#include "topk_common.glsl"
#include "topk_tile.glsl"
#include "common.glsl"

const uint SAMPLE = WORKGROUP;

shared uvec2 subgroup_extremes[SUBGROUPS];
uvec2 level0_window(uint row_start) {
  const uint stride = pc.n / SAMPLE;  // at least 128: rows of up to 32768 are topk_finish's alone
  const uint at = row_start + gl_LocalInvocationIndex * stride;
  const uint key = orderable(scores[at / 4u][at % 4u]);
  clear_histogram();
  atomicAdd(histogram[key >> 21u], 1u);
  uvec2 extremes = subgroupMax(uvec2(key, ~key));  // the largest key, and the complement of the smallest
  if (gl_SubgroupInvocationID == 0u) subgroup_extremes[gl_SubgroupID] = extremes;
  barrier();
  for (uint s = 0u; s < gl_NumSubgroups; ++s) extremes = max(extremes, subgroup_extremes[s]);
  const uint r = min(2u * (pc.k / stride) + 16u, SAMPLE);
  const uint lowest = max(choose_bin(r, false).x << 21u, ~extremes.y);
  const uint shift = uint(max(findMSB(extremes.x - lowest) - 10, 0));
  return uvec2(lowest & ~((1u << shift) - 1u), shift);
}

void main() {
  const uint tid = gl_LocalInvocationIndex, row = gl_WorkGroupID.y;
  if (!row_has_selection()) return;
  const uint row_start = row * pc.row_stride, state = row * TOPK_STATE_WORDS;
  const uvec2 vectors = row_vectors(row_start);
  const uvec2 slices = workgroup_tiles(pc.slices);  // slice s is tile s of the row
  Tile tile = load_tile(row_start, vectors.x + slices.x * TILE_VECTORS, vectors.y);  // in flight while the window is found
  const uvec2 window = level0_window(row_start);
  if (slices.x == 0u && tid == 0u) {
    select_state[state + TOPK_STATE_BASE] = window.x;
    select_state[state + TOPK_STATE_SHIFT] = window.y;
  }
  clear_histogram();
  for (uint slice = slices.x; slice < slices.y; ++slice) {
    const uint first = vectors.x + slice * TILE_VECTORS;
    if (slice != slices.x) tile = load_tile(row_start, first, vectors.y);
    [[unroll]] for (uint e = 0u; e < VECTORS; ++e)
      [[unroll]] for (uint c = 0u; c < 4u; ++c)
        if (first <= vectors.y && tile_has(tile, e, c)) atomicAdd(histogram[window_bin(tile_key(tile, e, c), window)], 1u);
  }
  barrier();
  for (uint b = tid; b < TOPK_BINS; b += WORKGROUP) {
    const uint count = histogram[b];
    if (count != 0u) atomicAdd(select_state[state + TOPK_STATE_HISTOGRAM + b], count);
  }
}
