#version 460
// The whole top-k of a short row (at most TOPK_ROW_MAX candidates) in one
// workgroup: three digit passes over the row with the histogram in shared
// memory, then each invocation writes a contiguous segment after a scan of the
// segments' counts. One dispatch, where topk_digit/count/write take five.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(std430, binding = 0) readonly buffer Scores { float scores[]; };   // [rows, row_stride]
layout(std430, binding = 1) writeonly buffer Indices { int indices[]; };  // [rows, out_stride]

#define TOPK_WRITES
#include "topk_common.glsl"

shared uint histogram[TOPK_BINS];

void main() {
  const uint tid = gl_LocalInvocationIndex, row = gl_WorkGroupID.y;
  if (!write_padding_and_trivial_rows(row, 0u, pc.n, true)) return;

  uint prefix = 0u, mask = 0u, remaining = pc.k;
  for (uint level = 0u; level < 3u; ++level) {
    const uint shift = digit_shift(level);
    for (uint b = tid; b < TOPK_BINS; b += WORKGROUP) histogram[b] = 0u;
    barrier();
    for (uint i = tid; i < pc.n; i += WORKGROUP) {
      uint key = orderable(scores[row * pc.row_stride + i]);
      if ((key & mask) == prefix) atomicAdd(histogram[(key >> shift) & (TOPK_BINS - 1u)], 1u);
    }
    barrier();
    uint counts[BINS_PER_INVOCATION];
    [[unroll]] for (uint j = 0u; j < BINS_PER_INVOCATION; ++j)
      counts[j] = histogram[TOPK_BINS - 1u - (tid * BINS_PER_INVOCATION + j)];
    uvec2 chosen = choose_bin(counts, remaining);
    prefix |= chosen.x << shift;
    mask |= (TOPK_BINS - 1u) << shift;
    remaining -= chosen.y;
  }

  const uint segment = (pc.n + WORKGROUP - 1u) / WORKGROUP;
  const uint first = min(tid * segment, pc.n), end = min(first + segment, pc.n);
  uvec2 total;
  uvec2 earlier = exclusive_scan(count_range(row, first, end, prefix), total);
  write_range(row, first, end, prefix, remaining, earlier);
}
