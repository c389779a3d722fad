#version 460
// TOVA: per candidate key, the mean over all query heads of the layer of the
// block's last query's dense probability exp(scale q.k_j - lse_h); one score row
// shared by the layer, written to every KV head's row for the top-k.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };  // [H, n, d]
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };        // [G, T, d]
layout(std430, binding = 2) readonly buffer LogSumExp { float lse[]; };    // [H, n], natural log
layout(std430, binding = 3) writeonly buffer Scores { float scores[]; };   // [G, row_stride]

layout(push_constant) uniform OracleScoresPush { ORACLE_SCORES_FIELDS } pc;

DEFINE_LOAD8(load_query, queries)
DEFINE_LOAD8(load_key, keys)

shared float query[HEAD_DIM];

void main() {
  const uint key = gl_GlobalInvocationID.x, last = pc.n_queries - 1u;
  float total = 0.0;
  for (uint head = 0u; head < pc.n_heads; ++head) {
    barrier();  // the previous head's query is no longer read
    for (uint chunk = gl_LocalInvocationIndex; chunk < HEAD_DIM / 8u; chunk += 128u) {
      vec4 lo, hi;
      load_query((head * pc.n_queries + last) * HEAD_DIM + chunk * 8u, lo, hi);
      for (uint c = 0u; c < 4u; ++c) {
        query[chunk * 8u + c] = lo[c];
        query[chunk * 8u + 4u + c] = hi[c];
      }
    }
    barrier();
    if (key >= pc.n_candidates) continue;
    const uint kv_head = head / (pc.n_heads / pc.n_kv_heads);
    float dot_product = 0.0;
    for (uint chunk = 0u; chunk < HEAD_DIM / 8u; ++chunk) {
      vec4 lo, hi;
      load_key((kv_head * pc.n_tokens + key) * HEAD_DIM + chunk * 8u, lo, hi);
      for (uint c = 0u; c < 4u; ++c) dot_product += query[chunk * 8u + c] * lo[c] + query[chunk * 8u + 4u + c] * hi[c];
    }
    total += exp(pc.scale * dot_product - lse[head * pc.n_queries + last]);
  }
  if (key >= pc.n_candidates) return;
  for (uint g = 0u; g < pc.n_kv_heads; ++g) scores[g * pc.row_stride + key] = total / float(pc.n_heads);
}
