#version 460
// LessIsMore, step 1: each query head's logit scale * q . k_j for the
// candidates before the recency window (a chunk scores with its heads' mean
// queries), as torch's attention weights the paper's top-k reads. The
// workgroups of head 0 also clear the unified ranks that step 2 raises.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "load.glsl"

layout(push_constant) uniform LessIsMoreScoresPush { LESSISMORE_SCORES_FIELDS } pc;

#include "head_query.glsl"
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };        // [G, T, d]
layout(std430, binding = 2) writeonly buffer Scores { float scores[]; };   // [H, row_stride]
layout(std430, binding = 3) writeonly buffer Unified { uint unified[]; };  // [n_scored]

DEFINE_LOAD8(load_key, keys)

shared float query[HEAD_DIM];

void main() {
  const uint head = gl_WorkGroupID.y, kv_head = head / (pc.n_heads / pc.n_kv_heads);
  for (uint c = gl_LocalInvocationIndex; c < HEAD_DIM; c += 128u) query[c] = head_query(head, c);
  barrier();
  const uint key = gl_GlobalInvocationID.x;
  if (key >= pc.n_scored) return;
  if (head == 0u) unified[key] = 0u;  // absent from every head's top keys
  float dot_product = 0.0;
  for (uint chunk = 0u; chunk < HEAD_DIM / 8u; ++chunk) {
    vec4 lo, hi;
    load_key((kv_head * pc.n_tokens + key) * HEAD_DIM + chunk * 8u, lo, hi);
    for (uint c = 0u; c < 4u; ++c) dot_product += query[chunk * 8u + c] * lo[c] + query[chunk * 8u + 4u + c] * hi[c];
  }
  scores[head * pc.row_stride + key] = pc.scale * dot_product;
}
