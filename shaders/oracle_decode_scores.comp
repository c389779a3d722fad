#version 460
// Oracle, decode: each query head's logit scale * q . k_j for every candidate
// key; ranking logits ranks the dense probabilities p_{h,t,j}.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };  // [H, 1, d]
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };        // [G, T, d]
layout(std430, binding = 2) writeonly buffer Scores { float scores[]; };   // [H, row_stride]

layout(push_constant) uniform OracleScoresPush { ORACLE_SCORES_FIELDS } pc;

DEFINE_LOAD8(load_query, queries)
DEFINE_LOAD8(load_key, keys)

shared float query[HEAD_DIM];

void main() {
  const uint head = gl_WorkGroupID.y, kv_head = head / (pc.n_heads / pc.n_kv_heads);
  for (uint chunk = gl_LocalInvocationIndex; chunk < HEAD_DIM / 8u; chunk += 128u) {
    vec4 lo, hi;
    load_query(head * HEAD_DIM + chunk * 8u, lo, hi);
    for (uint c = 0u; c < 4u; ++c) {
      query[chunk * 8u + c] = lo[c];
      query[chunk * 8u + 4u + c] = hi[c];
    }
  }
  barrier();
  const uint key = gl_GlobalInvocationID.x;
  if (key >= pc.n_candidates) return;
  float dot_product = 0.0;
  for (uint chunk = 0u; chunk < HEAD_DIM / 8u; ++chunk) {
    vec4 lo, hi;
    load_key((kv_head * pc.n_tokens + key) * HEAD_DIM + chunk * 8u, lo, hi);
    for (uint c = 0u; c < 4u; ++c) dot_product += query[chunk * 8u + c] * lo[c] + query[chunk * 8u + 4u + c] * hi[c];
  }
  scores[head * pc.row_stride + key] = pc.scale * dot_product;
}
