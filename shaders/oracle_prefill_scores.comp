#version 460
// Oracle, prefill: for each KV head and past key j, the dense attention mass
// the chunk puts on it, sum over the group's heads h and the chunk's queries i
// of p_{h,i,j} = exp(scale q_{h,i} . k_j - lse_{h,i}), with lse from the dense pass.
// One dispatch covers a slice of the (head, query) rows, so that no invocation
// outruns a loop limit (vk::DeviceInfo::loop_limit; engine/methods/oracle.cpp
// counts this kernel's loops per tile of rows).
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };     // [H, n, d]
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };           // [G, T, d]
layout(std430, binding = 2) readonly buffer LogSumExp { float log_sum_exp[]; };  // [H, n]
layout(std430, binding = 3) buffer Scores { float scores[]; };                // [G, row_stride]

layout(push_constant) uniform OracleScoresPush { ORACLE_SCORES_FIELDS } pc;

DEFINE_LOAD8(load_query, queries)
DEFINE_LOAD8(load_key, keys)

const uint QUERY_TILE = ORACLE_QUERY_TILE;
shared float query_tile[QUERY_TILE * HEAD_DIM];
shared float lse_tile[QUERY_TILE];

void main() {
  const uint kv_head = gl_WorkGroupID.y, group = pc.n_heads / pc.n_kv_heads;
  const uint key = gl_GlobalInvocationID.x;
  const bool in_range = key < pc.n_candidates;
  vec4 k[HEAD_DIM / 4u];
  for (uint chunk = 0u; chunk < HEAD_DIM / 8u; ++chunk) {
    vec4 lo = vec4(0), hi = vec4(0);
    if (in_range) load_key((kv_head * pc.n_tokens + key) * HEAD_DIM + chunk * 8u, lo, hi);
    k[2u * chunk] = lo;
    k[2u * chunk + 1u] = hi;
  }
  const uint rows = min(group * pc.n_queries, pc.slice_first + pc.slice_count);  // (head in group, query) pairs
  float mass = 0.0;
  for (uint row0 = pc.slice_first; row0 < rows; row0 += QUERY_TILE) {
    barrier();
    for (uint i = gl_LocalInvocationIndex; i < QUERY_TILE * (HEAD_DIM / 8u); i += 128u) {
      uint r = i / (HEAD_DIM / 8u), chunk = i % (HEAD_DIM / 8u), row = row0 + r;
      vec4 lo = vec4(0), hi = vec4(0);
      if (row < rows) load_query(((kv_head * group) * pc.n_queries + row) * HEAD_DIM + chunk * 8u, lo, hi);
      for (uint c = 0u; c < 4u; ++c) {
        query_tile[r * HEAD_DIM + chunk * 8u + c] = lo[c];
        query_tile[r * HEAD_DIM + chunk * 8u + 4u + c] = hi[c];
      }
    }
    for (uint r = gl_LocalInvocationIndex; r < QUERY_TILE; r += 128u)
      lse_tile[r] = row0 + r < rows ? log_sum_exp[kv_head * group * pc.n_queries + row0 + r] : 0.0;
    barrier();
    for (uint r = 0u; r < QUERY_TILE && row0 + r < rows; ++r) {
      float dot_product = 0.0;
      for (uint v = 0u; v < HEAD_DIM / 4u; ++v)
        dot_product += dot(vec4(query_tile[r * HEAD_DIM + 4u * v], query_tile[r * HEAD_DIM + 4u * v + 1u],
                                query_tile[r * HEAD_DIM + 4u * v + 2u], query_tile[r * HEAD_DIM + 4u * v + 3u]), k[v]);
      mass += exp(pc.scale * dot_product - lse_tile[r]);
    }
  }
  if (in_range) {
    const uint at = kv_head * pc.row_stride + key;
    scores[at] = pc.slice_first == 0u ? mass : scores[at] + mass;
  }
}
