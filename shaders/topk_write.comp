#version 460
// Writes a long row's top-k indices in ascending order, a slice per workgroup:
// each invocation owns PER_INVOCATION consecutive candidates, and its first
// output slot follows from the counts of the earlier slices (topk_count) and a
// scan over the invocations. Also writes the -1 padding, and every index when
// n <= k.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(std430, binding = 0) readonly buffer Scores { float scores[]; };            // [rows, row_stride]
layout(std430, binding = 1) readonly buffer SelectState { uint select_state[]; };  // [rows, TOPK_ROW_WORDS]
layout(std430, binding = 2) readonly buffer SliceCounts { uvec2 slice_counts[]; };  // [rows, slices]: (above, equal)
layout(std430, binding = 3) writeonly buffer Indices { int indices[]; };          // [rows, out_stride]

#define TOPK_WRITES
#include "topk_common.glsl"

void main() {
  const uint tid = gl_LocalInvocationIndex, slice = gl_WorkGroupID.x, row = gl_WorkGroupID.y;
  if (!write_padding_and_trivial_rows(row, slice * SLICE, min(pc.n, (slice + 1u) * SLICE), slice == 0u)) return;
  stage_slice(row, slice);
  const uint state = row * TOPK_ROW_WORDS;
  const uint threshold = select_state[state + TOPK_STATE_PREFIX], remaining = select_state[state + TOPK_STATE_REMAINING];
  uvec2 own_slices = uvec2(0), earlier;  // (above, equal) in the slices before this one
  for (uint s = tid; s < slice; s += WORKGROUP) own_slices += slice_counts[row * pc.slices + s];
  exclusive_scan(own_slices, earlier);

  const uint first = min(slice * SLICE + tid * PER_INVOCATION, pc.n), end = min(first + PER_INVOCATION, pc.n);
  uvec2 total;
  earlier += exclusive_scan(count_range(row, first, end, threshold), total);
  write_range(row, first, end, threshold, remaining, earlier);
}
