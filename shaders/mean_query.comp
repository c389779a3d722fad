#version 460
// The mean of each head's queries, as float: [H, n, d] -> [H, d], which Quest,
// Fier, SparQ and Loki score a prefill chunk with (decode reads its one query in
// place: head_query.glsl).
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(constant_id = 2) const uint WORKGROUP = 256;  // 8 floats of shared memory an invocation
layout(local_size_x_id = 2) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };  // [H, n, d]
layout(std430, binding = 1) writeonly buffer MeanQuery { float mean_query[]; };  // [H, d]

layout(push_constant) uniform MeanQueryPush { MEAN_QUERY_FIELDS } pc;

DEFINE_LOAD8(load_query, queries)

const uint MEAN_WORKGROUP = WORKGROUP;
#include "chunk_mean.glsl"

void main() {
  const uint head = gl_WorkGroupID.x;
  chunk_mean(head, pc.n_queries);
  for (uint c = gl_LocalInvocationIndex; c < HEAD_DIM; c += WORKGROUP) mean_query[head * HEAD_DIM + c] = mean[c];
}
