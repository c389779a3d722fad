#version 460
// Level 0 of a long row's radix select, one slice of TOPK_SLICE scores per
// workgroup: the histogram of its keys over the row's level-0 window, added to
// the row's histogram in memory (topk_finish clears it after use).
//
// The window comes from a strided sample of the row, the same in every
// workgroup: its bins start at the sample's smallest key and the highest bit
// where the sample's largest and smallest keys differ is their top bit, so
// that a row of one sign and size (Fier's and QuoKA's scores) spreads over the
// bins instead of piling onto a few; keys outside the sample's range land in
// the first or last bin, which are open-ended.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(std430, binding = 0) readonly buffer Scores { vec4 scores[]; };  // [rows, row_stride] floats
layout(std430, binding = 1) buffer SelectState { uint select_state[]; };  // [rows, TOPK_STATE_WORDS]

#define TOPK_WORKGROUP 256
#define TOPK_VECTORS 4u
#include "topk_common.glsl"
#include "topk_tile.glsl"

const uint SAMPLE = 4u * WORKGROUP;

shared uvec2 subgroup_extremes[SUBGROUPS];
uvec2 level0_window(uint row_start) {
  const uint stride = pc.n / SAMPLE;  // at least 8: topk_row takes rows of up to 8192
  float values[4];
  [[unroll]] for (uint j = 0u; j < 4u; ++j) {
    const uint at = row_start + (j * WORKGROUP + gl_LocalInvocationIndex) * stride;
    values[j] = scores[at / 4u][at % 4u];
  }
  uvec2 extremes = uvec2(0u);  // the largest key, and the complement of the smallest
  [[unroll]] for (uint j = 0u; j < 4u; ++j) extremes = max(extremes, uvec2(orderable(values[j]), ~orderable(values[j])));
  extremes = subgroupMax(extremes);
  if (gl_SubgroupInvocationID == 0u) subgroup_extremes[gl_SubgroupID] = extremes;
  barrier();
  for (uint s = 0u; s < gl_NumSubgroups; ++s) extremes = max(extremes, subgroup_extremes[s]);
  const uint shift = uint(max(findMSB(extremes.x ^ ~extremes.y) - 10, 0));
  return uvec2(~extremes.y & ~((1u << shift) - 1u), shift);
}

void main() {
  const uint tid = gl_LocalInvocationIndex, slice = gl_WorkGroupID.x, row = gl_WorkGroupID.y;
  if (!row_has_selection()) return;
  const uint row_start = row * pc.row_stride, state = row * TOPK_STATE_WORDS;
  const uvec2 vectors = row_vectors(row_start);
  const uvec2 window = level0_window(row_start);
  if (slice == 0u && tid == 0u) {
    select_state[state + TOPK_STATE_BASE] = window.x;
    select_state[state + TOPK_STATE_SHIFT] = window.y;
  }
  clear_histogram();
  const uint first = vectors.x + slice * TILE_VECTORS;
  const Tile tile = load_tile(row_start, first, vectors.y);
  [[unroll]] for (uint e = 0u; e < VECTORS; ++e)
    [[unroll]] for (uint c = 0u; c < 4u; ++c)
      if (first <= vectors.y && tile_has(tile, e, c)) atomicAdd(histogram[window_bin(tile_key(tile, e, c), window)], 1u);
  barrier();
  for (uint b = tid; b < TOPK_BINS; b += WORKGROUP) {
    const uint count = histogram[b];
    if (count != 0u) atomicAdd(select_state[state + TOPK_STATE_HISTOGRAM + b], count);
  }
}
