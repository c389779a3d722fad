#version 460
// KeyDiff step 2: the anchor of each KV head, the mean of its candidates'
// unit-normalised keys, from the splits' sums: [G, n_splits, d] -> [G, d].
//
// A workgroup per KV head: SLICES groups of d invocations each sum every
// SLICES-th split, four loads in flight, and the slices' sums meet in shared
// memory. (One invocation per channel walking all the splits waited on one
// load after another: 56.5 us for the 512 splits of 128k on the H100,
// docs/perf-experiments.md.)
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;  // at most 512
layout(local_size_x = 1024) in;
const uint SLICES = 1024u / HEAD_DIM;

layout(std430, binding = 0) readonly buffer Sums { float sums[]; };    // [G, n_splits, d]
layout(std430, binding = 1) writeonly buffer Anchor { float anchor[]; };  // [G, d]

layout(push_constant) uniform KeyDiffPush { KEYDIFF_FIELDS } pc;

shared float slice_sums[SLICES * HEAD_DIM];

void main() {
  const uint g = gl_WorkGroupID.x, c = gl_LocalInvocationIndex % HEAD_DIM, slice = gl_LocalInvocationIndex / HEAD_DIM;
  if (slice < SLICES) {
    vec4 totals = vec4(0.0);
    uint s = slice;
    for (; s + 3u * SLICES < pc.n_splits; s += 4u * SLICES)
      [[unroll]] for (uint i = 0u; i < 4u; ++i) totals[i] += sums[(g * pc.n_splits + s + i * SLICES) * HEAD_DIM + c];
    for (; s < pc.n_splits; s += SLICES) totals.x += sums[(g * pc.n_splits + s) * HEAD_DIM + c];
    slice_sums[slice * HEAD_DIM + c] = (totals.x + totals.y) + (totals.z + totals.w);
  }
  barrier();
  if (slice == 0u) {
    float total = 0.0;
    for (uint t = 0u; t < SLICES; ++t) total += slice_sums[t * HEAD_DIM + c];
    anchor[g * HEAD_DIM + c] = total / float(pc.n_candidates);
  }
}
