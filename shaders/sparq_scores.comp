#version 460
// SparQ step 1: per query head, approximate scores from the r query components
// of largest magnitude (ties toward the lower channel): s_j = sum_{c in R} q_c k_{j,c}.
// Only the key's 16-byte pieces that hold a kept channel are read.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "load.glsl"

layout(push_constant) uniform SparqPush { SPARQ_FIELDS } pc;

#include "head_query.glsl"
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };             // [G, T, d]
layout(std430, binding = 2) writeonly buffer Scores { float scores[]; };        // [H, row_stride]

DEFINE_LOAD8(load_key, keys)

shared float query[HEAD_DIM];
shared float kept_query[HEAD_DIM];  // q_c on kept channels, 0 elsewhere
shared uint piece_used[HEAD_DIM / 8u];

void main() {
  const uint head = gl_WorkGroupID.y, kv_head = head / (pc.n_heads / pc.n_kv_heads), tid = gl_LocalInvocationIndex;
  for (uint c = tid; c < HEAD_DIM; c += 128u) query[c] = head_query(head, c);
  barrier();
  for (uint c = tid; c < HEAD_DIM; c += 128u) {
    const float magnitude = abs(query[c]);
    uint rank = 0u;
    for (uint other = 0u; other < HEAD_DIM; ++other) {
      const float m = abs(query[other]);
      rank += (m > magnitude || (m == magnitude && other < c)) ? 1u : 0u;
    }
    kept_query[c] = rank < pc.r ? query[c] : 0.0;
  }
  barrier();
  for (uint p = tid; p < HEAD_DIM / 8u; p += 128u) {  // a kept channel with q_c = 0 adds nothing either way
    uint used = 0u;
    for (uint c = 0u; c < 8u; ++c) used |= kept_query[p * 8u + c] != 0.0 ? 1u : 0u;
    piece_used[p] = used;
  }
  barrier();
  const uint key = gl_GlobalInvocationID.x;
  if (key >= pc.n_candidates) return;
  float score = 0.0;
  for (uint p = 0u; p < HEAD_DIM / 8u; ++p) {
    if (piece_used[p] == 0u) continue;
    vec4 lo, hi;
    load_key((kv_head * pc.n_tokens + key) * HEAD_DIM + p * 8u, lo, hi);
    for (uint c = 0u; c < 4u; ++c) score += kept_query[p * 8u + c] * lo[c] + kept_query[p * 8u + 4u + c] * hi[c];
  }
  scores[head * pc.row_stride + key] = score;
}
