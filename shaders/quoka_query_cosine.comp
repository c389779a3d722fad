#version 460
// QuoKA steps 1-3, per query head: the cosine of each of the chunk's queries to
// the chunk's mean query; keeps the n_keep least similar, in ascending cosine
// (ties toward the lower position); normalises them and writes the group's
// aggregates [G, n_aggregates, d]. For max, a head's normalised kept queries
// are its own aggregates. For mean, each head writes its normalised kept
// queries, weighted 1/group, and the last head of the group to finish (an
// arrival counter, as attention_decode.glsl's) adds them up in head order, so
// the sum is the same whichever finishes last. No workgroup waits for
// another. Against a separate aggregate stage this took QuoKA prefill on the
// H100 from 120.5 to 117-118 us at 32k (docs/perf-experiments.md). A chunk of
// at most n_keep queries keeps all, in position order: the engine then skips
// this kernel for quoka_aggregate.
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
layout(constant_id = 4) const uint MAX_KEEP = 16;  // min(MAX_QUERIES, N_Q)

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };          // [H, n, d]
layout(std430, binding = 1) coherent buffer Normalized { vec4 normalized[]; };     // mean: [H, n_keep, d]
layout(std430, binding = 2) writeonly buffer Aggregates { vec4 aggregates[]; };    // [G, n_aggregates, d]
layout(std430, binding = 3) coherent buffer GroupArrivals { uint group_arrivals[]; };  // [G], zero between steps

layout(push_constant) uniform QuokaPush { QUOKA_FIELDS } pc;

DEFINE_LOAD8(load_query, queries)

const uint MEAN_WORKGROUP = WORKGROUP;
#include "chunk_mean.glsl"

const uint QUERY_LANES = 4u;  // within a subgroup (at least 4 lanes: engine/methods/quoka.cpp)
const uint QUERIES_AT_ONCE = WORKGROUP / QUERY_LANES;
shared float cosines[MAX_QUERIES];
shared float squared_norms[MAX_QUERIES];
shared uint kept[MAX_KEEP];  // by rank
shared bool last_to_finish;

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
    if (i < n && lane == 0u) {
      cosines[i] = norm > 0.0 && mean_norm > 0.0 ? dot_product / (sqrt(norm) * sqrt(mean_norm)) : 0.0;
      squared_norms[i] = norm;
    }
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
    if (i < n && lane == 0u && rank < pc.n_keep) kept[rank] = i;
  }
  barrier();

  // The kept queries normalised, QUERY_LANES lanes a query as above.
  const uint group = pc.n_heads / pc.n_kv_heads, kv_head = head / group;
  const float weight = pc.aggregate_max != 0u ? 1.0 : 1.0 / float(group);
  for (uint rank = slot / QUERY_LANES; rank < pc.n_keep; rank += QUERIES_AT_ONCE) {
    const uint i = kept[rank];
    const float norm = squared_norms[i], factor = norm > 0.0 ? weight / sqrt(norm) : 0.0;  // a zero query adds nothing
    for (uint chunk = lane; chunk < MEAN_CHUNKS; chunk += QUERY_LANES) {
      vec4 lo, hi;
      load_query((head * n + i) * HEAD_DIM + chunk * 8u, lo, hi);
      const uint at = ((head * pc.n_keep + rank) * HEAD_DIM + chunk * 8u) / 4u;  // the same place in both layouts
      if (pc.aggregate_max != 0u) {
        aggregates[at] = factor * lo;
        aggregates[at + 1u] = factor * hi;
      } else {
        normalized[at] = factor * lo;
        normalized[at + 1u] = factor * hi;
      }
    }
  }
  if (pc.aggregate_max != 0u) return;

  memoryBarrierBuffer();
  barrier();
  if (gl_LocalInvocationIndex == 0u) {
    const bool last = atomicAdd(group_arrivals[kv_head], 1u) == group - 1u;
    if (last) group_arrivals[kv_head] = 0u;  // ready for the next step
    last_to_finish = last;
  }
  barrier();
  if (!last_to_finish) return;
  memoryBarrierBuffer();
  const uint vectors = pc.n_keep * HEAD_DIM / 4u;  // a head's, and the group's aggregates
  for (uint x = gl_LocalInvocationIndex; x < vectors; x += WORKGROUP) {
    vec4 sum = vec4(0.0);
    for (uint h = 0u; h < group; ++h) sum += normalized[(kv_head * group + h) * vectors + x];
    aggregates[kv_head * vectors + x] = sum;
  }
}
