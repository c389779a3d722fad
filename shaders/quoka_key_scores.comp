#version 460
// QuoKA steps 2-4, per KV head and past key j: normalise the kept queries and
// the key, aggregate the group's kept queries (mean by rank, or all of them for
// `max`), and score s_j = max_i a_i . k_hat_j.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "common.glsl"
#include "load.glsl"

layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };  // [H, n, d]
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };        // [G, T, d]
layout(std430, binding = 2) readonly buffer Kept { uint kept[]; };         // [H, n_keep]
layout(std430, binding = 3) writeonly buffer Scores { float scores[]; };   // [G, row_stride]

layout(push_constant) uniform QuokaKeyPush { QUOKA_KEY_FIELDS } pc;

DEFINE_LOAD8(load_query, queries)
DEFINE_LOAD8(load_key, keys)

const uint AGGREGATE_TILE = 16;
shared float aggregate_tile[AGGREGATE_TILE * HEAD_DIM];

// Adds weight * q_hat of head `head`'s kept query `rank` into aggregate vector `slot`.
void add_normalised_query(uint slot, uint head, uint rank, float weight) {
  uint row = head * pc.n_queries + kept[head * pc.n_keep + rank];
  float norm = 0.0;
  for (uint chunk = 0u; chunk < HEAD_DIM / 8u; ++chunk) {
    vec4 lo, hi;
    load_query(row * HEAD_DIM + chunk * 8u, lo, hi);
    norm += dot(lo, lo) + dot(hi, hi);
  }
  float factor = norm > 0.0 ? weight / sqrt(norm) : 0.0;
  for (uint chunk = 0u; chunk < HEAD_DIM / 8u; ++chunk) {
    vec4 lo, hi;
    load_query(row * HEAD_DIM + chunk * 8u, lo, hi);
    for (uint c = 0u; c < 4u; ++c) {
      aggregate_tile[slot * HEAD_DIM + chunk * 8u + c] += factor * lo[c];
      aggregate_tile[slot * HEAD_DIM + chunk * 8u + 4u + c] += factor * hi[c];
    }
  }
}

void main() {
  const uint kv_head = gl_WorkGroupID.y, group = pc.n_heads / pc.n_kv_heads;
  const uint key = gl_GlobalInvocationID.x;
  const bool in_range = key < pc.n_candidates;
  vec4 k[HEAD_DIM / 4u];
  float key_norm = 0.0;
  for (uint chunk = 0u; chunk < HEAD_DIM / 8u; ++chunk) {
    vec4 lo = vec4(0), hi = vec4(0);
    if (in_range) load_key((kv_head * pc.n_tokens + key) * HEAD_DIM + chunk * 8u, lo, hi);
    k[2u * chunk] = lo;
    k[2u * chunk + 1u] = hi;
    key_norm += dot(lo, lo) + dot(hi, hi);
  }
  const float key_scale = key_norm > 0.0 ? 1.0 / sqrt(key_norm) : 0.0;  // a zero key stays zero

  const uint n_aggregates = pc.aggregate_max != 0u ? group * pc.n_keep : pc.n_keep;
  float best = LOWEST_FLOAT;
  for (uint a0 = 0u; a0 < n_aggregates; a0 += AGGREGATE_TILE) {
    barrier();
    for (uint i = gl_LocalInvocationIndex; i < AGGREGATE_TILE * HEAD_DIM; i += 128u) aggregate_tile[i] = 0.0;
    barrier();
    // One invocation builds each aggregate vector of the tile.
    uint slot = gl_LocalInvocationIndex, a = a0 + slot;
    if (slot < AGGREGATE_TILE && a < n_aggregates) {
      if (pc.aggregate_max != 0u) {
        add_normalised_query(slot, kv_head * group + a / pc.n_keep, a % pc.n_keep, 1.0);
      } else {
        for (uint h = 0u; h < group; ++h) add_normalised_query(slot, kv_head * group + h, a, 1.0 / float(group));
      }
    }
    barrier();
    for (uint s = 0u; s < AGGREGATE_TILE && a0 + s < n_aggregates; ++s) {
      float dot_product = 0.0;
      for (uint v = 0u; v < HEAD_DIM / 4u; ++v)
        dot_product += dot(vec4(aggregate_tile[s * HEAD_DIM + 4u * v], aggregate_tile[s * HEAD_DIM + 4u * v + 1u],
                                aggregate_tile[s * HEAD_DIM + 4u * v + 2u], aggregate_tile[s * HEAD_DIM + 4u * v + 3u]), k[v]);
      best = max(best, dot_product * key_scale);
    }
  }
  if (in_range) scores[kv_head * pc.row_stride + key] = best;
}
