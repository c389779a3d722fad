#version 460
// QuoKA steps 2-3, once per KV head and aggregate vector: normalise the group's
// kept queries and average them by rank (mean), or keep each one (max). The
// key-scoring pass reads the result; building it there, in every workgroup,
// cost a serial chain of query loads per tile of keys.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 64) in;  // one invocation per 8 channels; HEAD_DIM <= 512

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };    // [H, n, d]
layout(std430, binding = 1) readonly buffer Kept { uint kept[]; };           // [H, n_keep]
layout(std430, binding = 2) writeonly buffer Aggregates { float aggregates[]; };  // [G, n_aggregates, d]

layout(push_constant) uniform QuokaKeyPush { QUOKA_KEY_FIELDS } pc;

DEFINE_LOAD8(load_query, queries)

const uint CHUNKS = HEAD_DIM / 8u;
shared float partial_norm[64];

void main() {
  const uint a = gl_WorkGroupID.x, kv_head = gl_WorkGroupID.y, group = pc.n_heads / pc.n_kv_heads;
  const uint chunk = gl_LocalInvocationIndex;
  const uint n_aggregates = pc.aggregate_max != 0u ? group * pc.n_keep : pc.n_keep;
  // mean: every head of the group at rank a, weighted 1/group; max: one query.
  const uint first = pc.aggregate_max != 0u ? a / pc.n_keep : 0u;
  const uint count = pc.aggregate_max != 0u ? 1u : group;
  const uint rank = pc.aggregate_max != 0u ? a % pc.n_keep : a;
  const float weight = 1.0 / float(count);

  vec4 sum_lo = vec4(0), sum_hi = vec4(0);
  for (uint h = first; h < first + count; ++h) {
    const uint head = kv_head * group + h;
    const uint row = head * pc.n_queries + kept[head * pc.n_keep + rank];
    vec4 lo = vec4(0), hi = vec4(0);
    if (chunk < CHUNKS) load_query(row * HEAD_DIM + chunk * 8u, lo, hi);
    partial_norm[chunk] = dot(lo, lo) + dot(hi, hi);
    barrier();
    float norm = 0.0;
    for (uint c = 0u; c < CHUNKS; ++c) norm += partial_norm[c];
    barrier();
    const float factor = norm > 0.0 ? weight / sqrt(norm) : 0.0;  // a zero query adds nothing
    sum_lo += factor * lo;
    sum_hi += factor * hi;
  }
  if (chunk < CHUNKS && a < n_aggregates) {
    const uint base = (kv_head * n_aggregates + a) * HEAD_DIM + chunk * 8u;
    for (uint c = 0u; c < 4u; ++c) {
      aggregates[base + c] = sum_lo[c];
      aggregates[base + 4u + c] = sum_hi[c];
    }
  }
}
