#version 460
// How many keys of each slice of a long row lie above the k-th largest key T,
// and how many equal it; topk_write turns these into each slice's first slot.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(std430, binding = 0) readonly buffer Scores { float scores[]; };          // [rows, row_stride]
layout(std430, binding = 1) readonly buffer SelectState { uint select_state[]; };  // [rows, TOPK_ROW_WORDS]
layout(std430, binding = 2) writeonly buffer SliceCounts { uvec2 slice_counts[]; };  // [rows, slices]: (above, equal)

#include "topk_common.glsl"

void main() {
  const uint slice = gl_WorkGroupID.x, row = gl_WorkGroupID.y;
  if (pc.n <= pc.k || pc.k == 0u) return;
  stage_slice(row, slice);
  const uint threshold = select_state[row * TOPK_ROW_WORDS + TOPK_STATE_PREFIX];
  const uint first = slice * SLICE + gl_LocalInvocationIndex * PER_INVOCATION;
  uvec2 total;
  exclusive_scan(count_range(row, min(first, pc.n), min(first + PER_INVOCATION, pc.n), threshold), total);
  if (gl_LocalInvocationIndex == 0u) slice_counts[row * pc.slices + slice] = total;
}
