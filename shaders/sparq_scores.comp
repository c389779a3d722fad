#version 460
// SparQ step 1: per query head, approximate scores from the r query components
// of largest magnitude (ties toward the lower channel): s_j = sum_{c in R} q_c k_{j,c}.
// A workgroup scores a range of tiles of 128 keys of one KV head for every
// query head of its group, four heads at a time: it finds the heads' kept
// channels once, then each invocation reads its key once for the four and sums
// q_c k_{j,c} with their kept components (0 elsewhere), one vec4 per channel in
// shared memory, as fier_approx_scores does. On the H100 at 128k: 429 us with a
// workgroup per query head and tile, each key read once per head (20% of
// read); 323 us with a workgroup per tile and KV head finding the kept
// channels in each; 169 us so (docs/perf.md, session 18).
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "common.glsl"
#include "load.glsl"

layout(push_constant) uniform SparqPush { SPARQ_FIELDS } pc;

#include "head_query.glsl"
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };             // [G, T, d]
layout(std430, binding = 2) writeonly buffer Scores { float scores[]; };        // [H, row_stride]

DEFINE_LOAD8(load_key, keys)

const uint HEADS_AT_ONCE = 4u;
shared vec4 group_query[HEAD_DIM];  // channel c of heads first .. first + 3 (0 past the group)
shared vec4 kept_query[HEAD_DIM];   // the same on each head's kept channels, 0 elsewhere

void main() {
  const uint kv_head = gl_WorkGroupID.y, group = pc.n_heads / pc.n_kv_heads, tid = gl_LocalInvocationIndex;
  const uint tiles = (pc.n_candidates + 127u) / 128u;
  for (uint first = 0u; first < group; first += HEADS_AT_ONCE) {
    barrier();
    for (uint c = tid; c < HEAD_DIM; c += 128u) {
      vec4 q = vec4(0.0);
      for (uint j = 0u; j < HEADS_AT_ONCE && first + j < group; ++j) q[j] = head_query(kv_head * group + first + j, c);
      group_query[c] = q;
    }
    barrier();
    // Channel c's rank by magnitude among each head's channels, four heads at once.
    for (uint c = tid; c < HEAD_DIM; c += 128u) {
      const vec4 q = group_query[c], magnitude = abs(q);
      uvec4 rank = uvec4(0u);
      for (uint other = 0u; other < HEAD_DIM; ++other) {
        const vec4 m = abs(group_query[other]);
        rank += uvec4(greaterThan(m, magnitude)) + (other < c ? uvec4(equal(m, magnitude)) : uvec4(0u));
      }
      kept_query[c] = mix(vec4(0.0), q, lessThan(rank, uvec4(pc.r)));
    }
    barrier();
    // Tiles dealt out in turn among the KV head's workgroups (kTileWalkersPerKvHead says why).
    for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
      const uint key = tile * 128u + tid;
      if (key >= pc.n_candidates) break;
      vec4 score = vec4(0.0);
      for (uint chunk = 0u; chunk < HEAD_DIM / 8u; ++chunk) {
        vec4 lo, hi;
        load_key((kv_head * pc.n_tokens + key) * HEAD_DIM + chunk * 8u, lo, hi);
        for (uint c = 0u; c < 4u; ++c) score += kept_query[chunk * 8u + c] * lo[c] + kept_query[chunk * 8u + 4u + c] * hi[c];
      }
      for (uint j = 0u; j < HEADS_AT_ONCE && first + j < group; ++j)
        scores[(kv_head * group + first + j) * pc.row_stride + key] = score[j];
    }
  }
}
