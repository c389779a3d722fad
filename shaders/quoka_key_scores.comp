#version 460
// QuoKA step 4, per KV head and past key j: normalise the key and score
// s_j = max_i a_i . k_hat_j over the aggregate vectors of quoka_aggregate.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "common.glsl"
#include "load.glsl"

layout(std430, binding = 0) readonly buffer Aggregates { float aggregates[]; };  // [G, n_aggregates, d]
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };              // [G, T, d]
layout(std430, binding = 2) writeonly buffer Scores { float scores[]; };         // [G, row_stride]

layout(push_constant) uniform QuokaPush { QUOKA_FIELDS } pc;

DEFINE_LOAD8(load_key, keys)

const uint AGGREGATE_TILE = 16;
// vec4 elements: one shared-memory read per four channels, which bounded this
// pass with 16 aggregates when it read floats.
shared vec4 aggregate_tile[AGGREGATE_TILE * HEAD_DIM / 4u];

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
    for (uint i = gl_LocalInvocationIndex; i < AGGREGATE_TILE * HEAD_DIM / 4u; i += 128u) {
      const uint a = a0 + 4u * i / HEAD_DIM, e = (kv_head * n_aggregates + a0) * HEAD_DIM + 4u * i;
      aggregate_tile[i] = a < n_aggregates ? vec4(aggregates[e], aggregates[e + 1u], aggregates[e + 2u], aggregates[e + 3u])
                                           : vec4(0);
    }
    barrier();
    // Four aggregates at a time where there are four (prefill): four
    // independent sums, where one sum's chain of dependent adds bounded the
    // loop; one at a time otherwise (decode keeps one aggregate).
    const uint tile_end = min(AGGREGATE_TILE, n_aggregates - a0);
    uint s = 0u;
    for (; s + 4u <= tile_end; s += 4u) {
      vec4 dot_products = vec4(0.0);
      for (uint v = 0u; v < HEAD_DIM / 4u; ++v)
        dot_products += vec4(dot(aggregate_tile[s * HEAD_DIM / 4u + v], k[v]),
                             dot(aggregate_tile[(s + 1u) * HEAD_DIM / 4u + v], k[v]),
                             dot(aggregate_tile[(s + 2u) * HEAD_DIM / 4u + v], k[v]),
                             dot(aggregate_tile[(s + 3u) * HEAD_DIM / 4u + v], k[v]));
      best = max(best, max(max(dot_products.x, dot_products.y), max(dot_products.z, dot_products.w)) * key_scale);
    }
    for (; s < tile_end; ++s) {
      float dot_product = 0.0;
      for (uint v = 0u; v < HEAD_DIM / 4u; ++v) dot_product += dot(aggregate_tile[s * HEAD_DIM / 4u + v], k[v]);
      best = max(best, dot_product * key_scale);
    }
  }
  if (in_range) scores[kv_head * pc.row_stride + key] = best;
}
