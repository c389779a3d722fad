#version 460
// QuoKA steps 2-3 for a chunk of at most n_keep queries (decode), which keeps
// them all in position order, once per KV head and aggregate vector:
// normalise the group's queries and average them by position (mean), or keep
// each one (max). Longer chunks rank their queries first, and
// quoka_query_cosine.comp builds their aggregates itself. The key-scoring
// pass reads the result; building it there, in every workgroup, cost a serial
// chain of query loads per tile of keys.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 64) in;  // one invocation per 8 channels; HEAD_DIM <= 512

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };    // [H, n, d]
layout(std430, binding = 1) writeonly buffer Aggregates { float aggregates[]; };  // [G, n_aggregates, d]

layout(push_constant) uniform QuokaPush { QUOKA_FIELDS } pc;

DEFINE_LOAD8(load_query, queries)

const uint CHUNKS = HEAD_DIM / 8u;
// Heads whose kept queries are loaded together: one wait and one barrier for
// all of them, where a head at a time cost two dependent loads and two
// barriers each (on the H100 6.0 -> 4.8 us at 8k, unchanged at 32k and 128k;
// docs/perf-experiments.md).
const uint HEADS_AT_ONCE = 4u;
shared vec4 subgroup_norms[64];  // per subgroup: the batch's squared norms so far

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
  for (uint batch = first; batch < first + count; batch += HEADS_AT_ONCE) {
    uint rows[HEADS_AT_ONCE];
    [[unroll]] for (uint j = 0u; j < HEADS_AT_ONCE; ++j) {
      const uint head = kv_head * group + min(batch + j, first + count - 1u);
      rows[j] = head * pc.n_queries + rank;
    }
    vec4 lo[HEADS_AT_ONCE], hi[HEADS_AT_ONCE];
    vec4 own = vec4(0.0);  // this invocation's share of each head's squared norm
    [[unroll]] for (uint j = 0u; j < HEADS_AT_ONCE; ++j) {
      lo[j] = vec4(0);
      hi[j] = vec4(0);
      if (chunk < CHUNKS && batch + j < first + count) load_query(rows[j] * HEAD_DIM + chunk * 8u, lo[j], hi[j]);
      own[j] = dot(lo[j], lo[j]) + dot(hi[j], hi[j]);
    }
    own = subgroupAdd(own);
    if (subgroupElect()) subgroup_norms[gl_SubgroupID] = own;
    barrier();
    vec4 norm = vec4(0.0);
    for (uint s = 0u; s < gl_NumSubgroups; ++s) norm += subgroup_norms[s];
    barrier();
    [[unroll]] for (uint j = 0u; j < HEADS_AT_ONCE; ++j) {
      const float factor = norm[j] > 0.0 ? weight / sqrt(norm[j]) : 0.0;  // a zero query (or none) adds nothing
      sum_lo += factor * lo[j];
      sum_hi += factor * hi[j];
    }
  }
  if (chunk < CHUNKS && a < n_aggregates) {
    const uint base = (kv_head * n_aggregates + a) * HEAD_DIM + chunk * 8u;
    for (uint c = 0u; c < 4u; ++c) {
      aggregates[base + c] = sum_lo[c];
      aggregates[base + 4u + c] = sum_hi[c];
    }
  }
}
