#version 460
// Loki, once a step: per KV head and pass of four of its query heads, the
// queries projected onto the KV head's principal components, U q, one vec4 a
// component (heads first .. first + 3, 0 past the group), for loki_scores. A
// workgroup a (pass, KV head); PARTS neighbouring invocations share a
// component, a quarter of d each, their basis loads issued in batches, the
// first before the queries' loads are waited on.
// Projecting in each of loki_scores' 1024 workgroups cost the step ~20 us on
// the H100, every one of them reading the same basis (docs/perf-experiments.md).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

layout(push_constant) uniform LokiPush { LOKI_FIELDS } pc;

#include "load.glsl"
#include "head_query.glsl"
layout(std430, binding = 1) readonly buffer Basis { float basis[]; };                 // [G, rank, d]
layout(std430, binding = 2) writeonly buffer ProjectedQuery { vec4 projected_query[]; };  // [G, head passes, rank]

const uint HEADS_AT_ONCE = 4u;
const uint PARTS = 4u;               // invocations that share a component, a quarter of d each
const uint SPAN = HEAD_DIM / PARTS;  // d is a multiple of 8
const uint BATCH = 32u;              // basis terms an invocation loads at once
shared vec4 head_q[HEAD_DIM];        // channel x of heads first .. first + 3
shared vec4 partial_projection[128];

// Batch x0 of this invocation's basis terms for round_first's component;
// past the span, loads repeat its last term (weighed 0): no load waits on a branch.
void load_batch(uint kv_head, uint round_first, uint x0, out float b[BATCH]) {
  const uint c = min(round_first + gl_LocalInvocationIndex / PARTS, pc.rank - 1u);
  const uint row = (kv_head * pc.rank + c) * HEAD_DIM + (gl_LocalInvocationIndex % PARTS) * SPAN;
  [[unroll]] for (uint u = 0u; u < BATCH; ++u) b[u] = basis[row + min(x0 + u, SPAN - 1u)];
}

void main() {
  const uint pass = gl_WorkGroupID.x, kv_head = gl_WorkGroupID.y, tid = gl_LocalInvocationIndex;
  const uint group = pc.n_heads / pc.n_kv_heads, first = pass * HEADS_AT_ONCE, part = tid % PARTS;
  float b[BATCH];
  load_batch(kv_head, 0u, 0u, b);
  for (uint x = tid; x < HEAD_DIM; x += 128u) {
    head_q[x] = four_head_queries(kv_head * group + first, (kv_head + 1u) * group, x);
  }
  barrier();
  for (uint round_first = 0u; round_first < pc.rank; round_first += 128u / PARTS) {
    vec4 sum = vec4(0.0);
    for (uint x0 = 0u; x0 < SPAN; x0 += BATCH) {
      if (round_first > 0u || x0 > 0u) load_batch(kv_head, round_first, x0, b);
      [[unroll]] for (uint u = 0u; u < BATCH; ++u)
        sum += (x0 + u < SPAN ? b[u] : 0.0) * head_q[part * SPAN + min(x0 + u, SPAN - 1u)];
    }
    partial_projection[tid] = sum;
    barrier();
    if (tid < 128u / PARTS && round_first + tid < pc.rank) {
      vec4 whole = vec4(0.0);
      [[unroll]] for (uint p = 0u; p < PARTS; ++p) whole += partial_projection[tid * PARTS + p];
      projected_query[(kv_head * gl_NumWorkGroups.x + pass) * pc.rank + round_first + tid] = whole;
    }
    barrier();
  }
}
