#version 460
// KeyDiff step 3: s_j = -cos(k_j, anchor) per KV head (0 for a zero key or
// anchor), so the top-k keeps the keys least like the mean key.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Keys { uvec4 keys[]; };        // [G, T, d]
layout(std430, binding = 1) readonly buffer Anchor { float anchor[]; };   // [G, d]
layout(std430, binding = 2) writeonly buffer Scores { float scores[]; };  // [G, row_stride]

layout(push_constant) uniform KeyDiffPush { KEYDIFF_FIELDS } pc;

DEFINE_LOAD8(load_key, keys)

shared float anchor_tile[HEAD_DIM];
shared float anchor_norm;

void main() {
  const uint g = gl_WorkGroupID.y, j = gl_GlobalInvocationID.x;
  for (uint c = gl_LocalInvocationIndex; c < HEAD_DIM; c += 128u) anchor_tile[c] = anchor[g * HEAD_DIM + c];
  barrier();
  if (gl_LocalInvocationIndex == 0u) {
    float squares = 0.0;
    for (uint c = 0u; c < HEAD_DIM; ++c) squares += anchor_tile[c] * anchor_tile[c];
    anchor_norm = sqrt(squares);
  }
  barrier();
  if (j >= pc.n_candidates) return;
  float dot_product = 0.0, squares = 0.0;
  for (uint chunk = 0u; chunk < HEAD_DIM / 8u; ++chunk) {
    vec4 lo, hi;
    load_key((g * pc.n_tokens + j) * HEAD_DIM + chunk * 8u, lo, hi);
    for (uint c = 0u; c < 4u; ++c)
      dot_product += lo[c] * anchor_tile[chunk * 8u + c] + hi[c] * anchor_tile[chunk * 8u + 4u + c];
    squares += dot(lo, lo) + dot(hi, hi);
  }
  scores[g * pc.row_stride + j] =
      squares > 0.0 && anchor_norm > 0.0 ? -dot_product / (sqrt(squares) * anchor_norm) : 0.0;
}
