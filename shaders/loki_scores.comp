#version 460
// Loki, per step: per query head, the approximate logits (U q) . K~_j in the
// KV head's principal subspace, for every candidate.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

layout(push_constant) uniform LokiPush { LOKI_FIELDS } pc;

#include "head_query.glsl"
layout(std430, binding = 1) readonly buffer Basis { float basis[]; };           // [G, rank, d]
layout(std430, binding = 2) readonly buffer Projected { float projected[]; };   // [G, rank, T], channel-major: neighbouring keys, neighbouring words
layout(std430, binding = 3) writeonly buffer Scores { float scores[]; };        // [H, row_stride]

shared float query[LOKI_MAX_BASIS / 8u];  // rank <= LOKI_MAX_BASIS / d, and d >= 8

void main() {
  const uint head = gl_WorkGroupID.y, g = head / (pc.n_heads / pc.n_kv_heads), j = gl_GlobalInvocationID.x;
  for (uint c = gl_LocalInvocationIndex; c < pc.rank; c += 128u) {
    float sum = 0.0;
    for (uint x = 0u; x < HEAD_DIM; ++x) sum += basis[(g * pc.rank + c) * HEAD_DIM + x] * head_query(head, x);
    query[c] = sum;
  }
  barrier();
  if (j >= pc.n_candidates) return;
  float score = 0.0;
  for (uint c = 0u; c < pc.rank; ++c) score += query[c] * projected[(g * pc.rank + c) * pc.n_tokens + j];
  scores[head * pc.row_stride + j] = score;
}
