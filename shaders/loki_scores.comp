#version 460
// Loki, per step: per query head, the approximate logits (U q) . K~_j in the
// KV head's principal subspace, for every candidate. A workgroup scores a
// range of tiles of 128 tokens of one KV head, for every query head of its
// group, after projecting the queries once: projecting them for each tile (a
// serial dot product of d terms per invocation) took most of this pass, 308
// us at 128k on the H100 (docs/perf.md, session 18).
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

layout(push_constant) uniform LokiPush { LOKI_FIELDS } pc;

#include "common.glsl"
#include "load.glsl"
#include "head_query.glsl"
layout(std430, binding = 1) readonly buffer Basis { float basis[]; };           // [G, rank, d]
layout(std430, binding = 2) readonly buffer Projected { float projected[]; };   // LOKI_PROJECTED_AT: a tile's components, each its keys in order
layout(std430, binding = 3) writeonly buffer Scores { float scores[]; };        // [H, row_stride]

// The query heads of a KV head read the same projected keys: a workgroup
// scores its tokens for four of them per read (one vec4 of (U q) per
// component), as fier_approx_scores does. One workgroup per head read the
// projected keys once per head, 4x the bytes at GQA 4, and projected its
// query with 32 invocations walking d channels each (docs/perf.md, session 9).
const uint HEADS_AT_ONCE = 4u;
shared vec4 group_query[LOKI_MAX_BASIS / 8u];  // U q of heads first .. first + 3; rank <= LOKI_MAX_BASIS / d, d >= 8
shared float head_q[HEADS_AT_ONCE * HEAD_DIM];

void main() {
  const uint kv_head = gl_WorkGroupID.y, group = pc.n_heads / pc.n_kv_heads;
  const uint tid = gl_LocalInvocationIndex, tiles = (pc.n_candidates + 127u) / 128u;
  for (uint first = 0u; first < group; first += HEADS_AT_ONCE) {
    barrier();
    for (uint i = tid; i < HEADS_AT_ONCE * HEAD_DIM; i += 128u) {
      const uint slot = i / HEAD_DIM;
      head_q[i] = first + slot < group ? head_query(kv_head * group + first + slot, i % HEAD_DIM) : 0.0;
    }
    barrier();
    for (uint i = tid; i < HEADS_AT_ONCE * pc.rank; i += 128u) {
      const uint c = i / HEADS_AT_ONCE, slot = i % HEADS_AT_ONCE;
      float sum = 0.0;
      for (uint x = 0u; x < HEAD_DIM; ++x) sum += basis[(kv_head * pc.rank + c) * HEAD_DIM + x] * head_q[slot * HEAD_DIM + x];
      group_query[c][slot] = sum;
    }
    barrier();
    // Tiles dealt out in turn among the KV head's workgroups (kTileWalkersPerKvHead says why).
    for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
      const uint j = tile * 128u + tid;
      if (j >= pc.n_candidates) break;
      vec4 score = vec4(0.0);
      for (uint c = 0u; c < pc.rank; ++c)
        score += group_query[c] * projected[LOKI_PROJECTED_AT(kv_head, c, j, pc.rank, pc.n_tokens)];
      for (uint slot = 0u; slot < HEADS_AT_ONCE && first + slot < group; ++slot)
        scores[(kv_head * group + first + slot) * pc.row_stride + j] = score[slot];
    }
  }
}
