#version 460
// QuoKA step 1, per query head: the cosine of each of the chunk's queries to the
// chunk's mean query; keeps the n_keep least similar, in ascending cosine (ties
// toward the lower position). Writes indices into the chunk, [H, n_keep]. A
// chunk of at most n_keep queries keeps all, in position order: the engine
// then skips this kernel and quoka_aggregate takes rank i as query i.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(constant_id = 2) const uint MAX_QUERIES = 1024;
layout(local_size_x = 128) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };  // [H, n, d]
layout(std430, binding = 1) writeonly buffer Kept { uint kept[]; };        // [H, n_keep]

layout(push_constant) uniform QuokaQueryPush { QUOKA_QUERY_FIELDS } pc;

DEFINE_LOAD8(load_query, queries)

#include "chunk_mean.glsl"

shared float cosines[MAX_QUERIES];

void main() {
  const uint head = gl_WorkGroupID.x, tid = gl_LocalInvocationIndex, n = pc.n_queries;
  chunk_mean(head, n);
  float mean_norm = 0.0;
  for (uint c = 0u; c < HEAD_DIM; ++c) mean_norm += mean[c] * mean[c];
  mean_norm = sqrt(mean_norm);
  for (uint i = tid; i < n; i += 128u) {
    float dot_product = 0.0, norm = 0.0;
    for (uint chunk = 0u; chunk < HEAD_DIM / 8u; ++chunk) {
      vec4 lo, hi;
      load_query((head * n + i) * HEAD_DIM + chunk * 8u, lo, hi);
      for (uint c = 0u; c < 4u; ++c) {
        dot_product += lo[c] * mean[chunk * 8u + c] + hi[c] * mean[chunk * 8u + 4u + c];
        norm += lo[c] * lo[c] + hi[c] * hi[c];
      }
    }
    // A zero query or mean has no direction: cosine 0.
    float cosine = norm > 0.0 && mean_norm > 0.0 ? dot_product / (sqrt(norm) * mean_norm) : 0.0;
    cosines[i] = cosine;
  }
  barrier();
  for (uint i = tid; i < n; i += 128u) {
    uint rank = 0u;
    for (uint j = 0u; j < n; ++j) rank += (cosines[j] < cosines[i] || (cosines[j] == cosines[i] && j < i)) ? 1u : 0u;
    if (rank < pc.n_keep) kept[head * pc.n_keep + rank] = i;
  }
}
