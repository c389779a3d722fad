#version 460
// The mean of each head's queries, as float: [H, n, d] -> [H, d], which Quest,
// Fier, SparQ and Loki score a prefill chunk with (decode reads its one query in
// place: head_query.glsl).
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 64) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };  // [H, n, d]
layout(std430, binding = 1) writeonly buffer MeanQuery { float mean_query[]; };  // [H, d]

layout(push_constant) uniform MeanQueryPush { MEAN_QUERY_FIELDS } pc;

DEFINE_LOAD8(load_query, queries)

void main() {
  const uint head = gl_WorkGroupID.x;
  for (uint chunk = gl_LocalInvocationIndex; chunk < HEAD_DIM / 8u; chunk += 64u) {
    vec4 sum_lo = vec4(0), sum_hi = vec4(0);
    for (uint i = 0u; i < pc.n_queries; ++i) {
      vec4 lo, hi;
      load_query((head * pc.n_queries + i) * HEAD_DIM + chunk * 8u, lo, hi);
      sum_lo += lo;
      sum_hi += hi;
    }
    for (uint c = 0u; c < 4u; ++c) {
      mean_query[head * HEAD_DIM + chunk * 8u + c] = sum_lo[c] / float(pc.n_queries);
      mean_query[head * HEAD_DIM + chunk * 8u + 4u + c] = sum_hi[c] / float(pc.n_queries);
    }
  }
}
