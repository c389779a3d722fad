#version 460
// KeyDiff step 2: the anchor of each KV head, the mean of its candidates'
// unit-normalised keys, from the splits' sums: [G, n_splits, d] -> [G, d].
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(local_size_x = 128) in;

layout(std430, binding = 0) readonly buffer Sums { float sums[]; };    // [G, n_splits, d]
layout(std430, binding = 1) writeonly buffer Anchor { float anchor[]; };  // [G, d]

layout(push_constant) uniform KeyDiffPush { KEYDIFF_FIELDS } pc;

void main() {
  const uint g = gl_WorkGroupID.x;
  for (uint c = gl_LocalInvocationIndex; c < HEAD_DIM; c += 128u) {
    float total = 0.0;
    for (uint s = 0u; s < pc.n_splits; ++s) total += sums[(g * pc.n_splits + s) * HEAD_DIM + c];
    anchor[g * HEAD_DIM + c] = total / float(pc.n_candidates);
  }
}
