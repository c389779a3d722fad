#version 460
// SparQ step 1, once a step: per KV head and pass of four of its query heads,
// each head's query on its r components of largest magnitude (ties toward the
// lower channel) and 0 elsewhere, one vec4 a channel (heads first .. first + 3,
// 0 past the group), for sparq_scores. A workgroup a (pass, KV head), PARTS
// invocations a channel, each comparing it with a part of the channels, so
// that the step waits on a quarter of the d comparisons. Ranking the channels
// in each of sparq_scores' 1024 workgroups cost the step ~20 us on the H100
// (docs/perf-experiments.md).
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 512) in;

#include "load.glsl"

layout(push_constant) uniform SparqPush { SPARQ_FIELDS } pc;

#include "head_query.glsl"
layout(std430, binding = 1) writeonly buffer KeptQuery { vec4 kept_query[]; };  // [G, head passes, d]

const uint HEADS_AT_ONCE = 4u;
const uint PARTS = 4u;
const uint CHANNELS_AT_ONCE = 512u / PARTS;
shared vec4 group_query[HEAD_DIM];
shared uvec4 partial_rank[512];  // [channel of the round][part]

void main() {
  const uint pass = gl_WorkGroupID.x, kv_head = gl_WorkGroupID.y, tid = gl_LocalInvocationIndex;
  const uint group = pc.n_heads / pc.n_kv_heads, first = pass * HEADS_AT_ONCE;
  for (uint c = tid; c < HEAD_DIM; c += 512u) {
    group_query[c] = four_head_queries(kv_head * group + first, (kv_head + 1u) * group, c);
  }
  barrier();
  // Channel c's rank by magnitude among each head's channels, four heads at once.
  const uint part = tid % PARTS, part_size = (HEAD_DIM + PARTS - 1u) / PARTS;
  for (uint round_first = 0u; round_first < HEAD_DIM; round_first += CHANNELS_AT_ONCE) {
    const uint c = min(round_first + tid / PARTS, HEAD_DIM - 1u);
    const vec4 magnitude = abs(group_query[c]);
    uvec4 rank = uvec4(0u);
    for (uint other = part * part_size; other < min((part + 1u) * part_size, HEAD_DIM); ++other) {
      const vec4 m = abs(group_query[other]);
      rank += uvec4(greaterThan(m, magnitude)) + (other < c ? uvec4(equal(m, magnitude)) : uvec4(0u));
    }
    partial_rank[tid] = rank;
    barrier();
    if (tid < CHANNELS_AT_ONCE && round_first + tid < HEAD_DIM) {
      const uint channel = round_first + tid;
      uvec4 whole = uvec4(0u);
      for (uint p = 0u; p < PARTS; ++p) whole += partial_rank[tid * PARTS + p];
      kept_query[(kv_head * gl_NumWorkGroups.x + pass) * HEAD_DIM + channel] =
          mix(vec4(0.0), group_query[channel], lessThan(whole, uvec4(pc.r)));
    }
    barrier();
  }
}
