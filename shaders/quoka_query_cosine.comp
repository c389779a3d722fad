#version 460
// QuoKA step 1, per query head: the cosine of each of the chunk's queries to the
// chunk's mean query; keeps the n_keep least similar, in ascending cosine (ties
// toward the lower position). Writes indices into the chunk, [H, n_keep]. A
// chunk of at most n_keep queries keeps all, in position order: the engine
// then skips this kernel and quoka_aggregate takes rank i as query i.
//
// QUERY_LANES neighbouring invocations share each query: its channels for the
// cosine, its comparisons for the rank, their parts summed with xor shuffles.
// Every phase is a chain of dependent steps in one workgroup a head, and the
// lanes cut each chain to a quarter of what one invocation a query walked.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(constant_id = 2) const uint MAX_QUERIES = 1024;
layout(constant_id = 3) const uint WORKGROUP = 512;  // a multiple of the subgroup size
layout(local_size_x_id = 3) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };  // [H, n, d]
layout(std430, binding = 1) writeonly buffer Kept { uint kept[]; };        // [H, n_keep]

layout(push_constant) uniform QuokaQueryPush { QUOKA_QUERY_FIELDS } pc;

DEFINE_LOAD8(load_query, queries)

const uint MEAN_WORKGROUP = WORKGROUP;
#include "chunk_mean.glsl"

const uint QUERY_LANES = 4u;  // within a subgroup (at least 4 lanes: engine/methods/quoka.cpp)
const uint QUERIES_AT_ONCE = WORKGROUP / QUERY_LANES;
shared float cosines[MAX_QUERIES];

float lanes_sum(float x) {
  x += subgroupShuffleXor(x, 1u);
  return x + subgroupShuffleXor(x, 2u);
}
uint lanes_sum(uint x) {
  x += subgroupShuffleXor(x, 1u);
  return x + subgroupShuffleXor(x, 2u);
}

void main() {
  const uint head = gl_WorkGroupID.x, n = pc.n_queries;
  // A query's lanes are neighbours in a subgroup, whatever the device's order
  // of invocations in subgroups.
  const uint slot = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID, lane = slot % QUERY_LANES;
  chunk_mean(head, n);
  for (uint first = 0u; first < n; first += QUERIES_AT_ONCE) {
    const uint i = first + slot / QUERY_LANES;
    float dot_product = 0.0, norm = 0.0, mean_norm = 0.0;
    if (i < n) {
      for (uint chunk = lane; chunk < MEAN_CHUNKS; chunk += QUERY_LANES) {
        vec4 lo, hi;
        load_query((head * n + i) * HEAD_DIM + chunk * 8u, lo, hi);
        const vec4 mean_lo = vec4(mean[chunk * 8u], mean[chunk * 8u + 1u], mean[chunk * 8u + 2u], mean[chunk * 8u + 3u]);
        const vec4 mean_hi = vec4(mean[chunk * 8u + 4u], mean[chunk * 8u + 5u], mean[chunk * 8u + 6u], mean[chunk * 8u + 7u]);
        dot_product += dot(lo, mean_lo) + dot(hi, mean_hi);
        norm += dot(lo, lo) + dot(hi, hi);
        mean_norm += dot(mean_lo, mean_lo) + dot(mean_hi, mean_hi);
      }
    }
    dot_product = lanes_sum(dot_product);
    norm = lanes_sum(norm);
    mean_norm = lanes_sum(mean_norm);
    // A zero query or mean has no direction: cosine 0.
    if (i < n && lane == 0u) cosines[i] = norm > 0.0 && mean_norm > 0.0 ? dot_product / (sqrt(norm) * sqrt(mean_norm)) : 0.0;
  }
  barrier();
  for (uint first = 0u; first < n; first += QUERIES_AT_ONCE) {
    const uint i = first + slot / QUERY_LANES;
    uint rank = 0u;
    if (i < n) {
      const float own = cosines[i];
      for (uint j = lane; j < n; j += QUERY_LANES) rank += (cosines[j] < own || (cosines[j] == own && j < i)) ? 1u : 0u;
    }
    rank = lanes_sum(rank);
    if (i < n && lane == 0u && rank < pc.n_keep) kept[head * pc.n_keep + rank] = i;
  }
}
