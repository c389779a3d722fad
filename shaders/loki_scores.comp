#version 460
// Loki, per step: per query head, the approximate logits (U q) . K~_j in the
// KV head's principal subspace, for every candidate, with the projected
// queries of loki_project_query. A workgroup scores a range of tiles of 128
// tokens of one KV head, an invocation a token, for every query head of its
// group: the query heads of a KV head read the same projected keys, so a
// workgroup scores its tokens for four of them per read (one vec4 of U q per
// component), as fier_approx_scores does. One workgroup per head read the
// projected keys once per head, 4x the bytes at GQA 4 (docs/perf-experiments.md).
//
// A token's components are loaded in batches, every load unconditional (past
// the rank they repeat the last component, weighed 0), so that none waits on
// a branch: loads behind `c < rank` took this loop 133.8 us at 128k on the
// H100, unconditional ones 57.2 (docs/perf-experiments.md).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

layout(push_constant) uniform LokiPush { LOKI_FIELDS } pc;

layout(std430, binding = 0) readonly buffer ProjectedQuery { vec4 projected_query[]; };  // [G, head passes, rank]
layout(std430, binding = 1) readonly buffer Projected { float projected[]; };          // LOKI_PROJECTED_AT: a tile's components, each its keys in order
layout(std430, binding = 2) writeonly buffer Scores { float scores[]; };               // [H, row_stride]

const uint HEADS_AT_ONCE = 4u;
const uint BATCH = 32u;  // a token's components an invocation loads at once
// U q of heads first .. first + 3, then 0 up to a whole batch: rank <= LOKI_MAX_BASIS / 8 (d >= 8), a multiple of BATCH
shared vec4 group_query[LOKI_MAX_BASIS / 8u];

void main() {
  const uint kv_head = gl_WorkGroupID.y, group = pc.n_heads / pc.n_kv_heads;
  const uint tid = gl_LocalInvocationIndex, tiles = (pc.n_candidates + 127u) / 128u;
  const uint passes = (group + HEADS_AT_ONCE - 1u) / HEADS_AT_ONCE;
  const uint batched_rank = (pc.rank + BATCH - 1u) / BATCH * BATCH;
  for (uint pass = 0u; pass < passes; ++pass) {
    const uint first = pass * HEADS_AT_ONCE;
    barrier();
    for (uint c = tid; c < batched_rank; c += 128u)
      group_query[c] = c < pc.rank ? projected_query[(kv_head * passes + pass) * pc.rank + c] : vec4(0.0);
    barrier();
    // Tiles dealt out in turn among the KV head's workgroups (kTileWalkersPerKvHead says why).
    for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
      const uint j = tile * 128u + tid;
      if (j >= pc.n_candidates) break;
      const uint at = LOKI_PROJECTED_AT(kv_head, 0u, j, pc.rank, pc.n_tokens);  // component c at at + c * LOKI_TILE
      vec4 score = vec4(0.0);
      for (uint c0 = 0u; c0 < pc.rank; c0 += BATCH) {
        float v[BATCH];
        [[unroll]] for (uint u = 0u; u < BATCH; ++u) v[u] = projected[at + min(c0 + u, pc.rank - 1u) * LOKI_TILE];
        [[unroll]] for (uint u = 0u; u < BATCH; ++u) score += group_query[c0 + u] * v[u];
      }
      for (uint slot = 0u; slot < HEADS_AT_ONCE && first + slot < group; ++slot)
        scores[(kv_head * group + first + slot) * pc.row_stride + j] = score[slot];
    }
  }
}
