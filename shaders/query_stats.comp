#version 460
// The observation QuoKA rests on, for the viewer's cosine panel: per query of a
// chunk of one head (one workgroup per query), its cosine to the chunk's mean
// query and how many keys it needs to reach `mass` of its dense attention.
// The count needs no sort: non-negative floats order as their bit patterns, so
// a bisection over bit patterns finds tau, the smallest probability of the top
// set; the keys above tau count whole and the ties at tau count as needed.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"
#include "common.glsl"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 256) in;
const uint THREADS = 256u;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };  // [n, d], one head
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };        // [G, T, d]
layout(std430, binding = 2) buffer Probabilities { float probabilities[]; };  // scratch [n, row_stride]
layout(std430, binding = 3) writeonly buffer Cosines { float cosines[]; };    // [n]
layout(std430, binding = 4) writeonly buffer Counts { uint keys_needed[]; };  // [n]

layout(push_constant) uniform QueryStatsPush { QUERY_STATS_FIELDS } pc;

DEFINE_LOAD8(load_query, queries)
DEFINE_LOAD8(load_key, keys)

shared float query[HEAD_DIM];
shared float mean[HEAD_DIM];
shared float reduce_float[THREADS];
shared uint reduce_uint[THREADS];

float workgroup_sum(float value) {
  reduce_float[gl_LocalInvocationIndex] = value;
  barrier();
  for (uint width = THREADS / 2u; width > 0u; width /= 2u) {
    if (gl_LocalInvocationIndex < width)
      reduce_float[gl_LocalInvocationIndex] += reduce_float[gl_LocalInvocationIndex + width];
    barrier();
  }
  float total = reduce_float[0];
  barrier();
  return total;
}

float workgroup_max(float value) {
  reduce_float[gl_LocalInvocationIndex] = value;
  barrier();
  for (uint width = THREADS / 2u; width > 0u; width /= 2u) {
    if (gl_LocalInvocationIndex < width)
      reduce_float[gl_LocalInvocationIndex] =
          max(reduce_float[gl_LocalInvocationIndex], reduce_float[gl_LocalInvocationIndex + width]);
    barrier();
  }
  float total = reduce_float[0];
  barrier();
  return total;
}

uint workgroup_count(uint value) {
  reduce_uint[gl_LocalInvocationIndex] = value;
  barrier();
  for (uint width = THREADS / 2u; width > 0u; width /= 2u) {
    if (gl_LocalInvocationIndex < width)
      reduce_uint[gl_LocalInvocationIndex] += reduce_uint[gl_LocalInvocationIndex + width];
    barrier();
  }
  uint total = reduce_uint[0];
  barrier();
  return total;
}

void main() {
  const uint i = gl_WorkGroupID.x, tid = gl_LocalInvocationIndex, n = pc.n_queries;
  const uint n_keys = pc.first_position + i + 1u;
  const uint row = i * pc.row_stride;

  for (uint chunk = tid; chunk < HEAD_DIM / 8u; chunk += THREADS) {
    vec4 sum_lo = vec4(0), sum_hi = vec4(0), lo, hi;
    for (uint other = 0u; other < n; ++other) {
      load_query(other * HEAD_DIM + chunk * 8u, lo, hi);
      sum_lo += lo;
      sum_hi += hi;
    }
    load_query(i * HEAD_DIM + chunk * 8u, lo, hi);
    for (uint c = 0u; c < 4u; ++c) {
      mean[chunk * 8u + c] = sum_lo[c] / float(n);
      mean[chunk * 8u + 4u + c] = sum_hi[c] / float(n);
      query[chunk * 8u + c] = lo[c];
      query[chunk * 8u + 4u + c] = hi[c];
    }
  }
  barrier();
  if (tid == 0u) {
    float dot_product = 0.0, query_norm = 0.0, mean_norm = 0.0;
    for (uint c = 0u; c < HEAD_DIM; ++c) {
      dot_product += query[c] * mean[c];
      query_norm += query[c] * query[c];
      mean_norm += mean[c] * mean[c];
    }
    // A zero query or mean has no direction: cosine 0, as QuoKA's kernel.
    cosines[i] = query_norm > 0.0 && mean_norm > 0.0 ? dot_product / (sqrt(query_norm) * sqrt(mean_norm)) : 0.0;
  }

  float row_max = LOWEST_FLOAT;
  for (uint j = tid; j < n_keys; j += THREADS) {
    float score = 0.0;
    for (uint chunk = 0u; chunk < HEAD_DIM / 8u; ++chunk) {
      vec4 lo, hi;
      load_key((pc.kv_head * pc.n_tokens + j) * HEAD_DIM + chunk * 8u, lo, hi);
      [[unroll]] for (uint c = 0u; c < 4u; ++c) score += lo[c] * query[chunk * 8u + c] + hi[c] * query[chunk * 8u + 4u + c];
    }
    score *= pc.scale_log2;
    probabilities[row + j] = score;
    row_max = max(row_max, score);
  }
  row_max = workgroup_max(row_max);
  float partial = 0.0;
  for (uint j = tid; j < n_keys; j += THREADS) {
    float p = exp2(probabilities[row + j] - row_max);
    probabilities[row + j] = p;
    partial += p;
  }
  const float target = pc.mass * workgroup_sum(partial);

  // The largest bit pattern b whose keys {p : bits(p) >= b} still hold the
  // target mass; all of it at b = 0, and the largest p is exactly 1.
  uint low = 0u, high = floatBitsToUint(1.0);
  while (low < high) {
    const uint middle = low + (high - low + 1u) / 2u;
    partial = 0.0;
    for (uint j = tid; j < n_keys; j += THREADS) {
      float p = probabilities[row + j];
      if (floatBitsToUint(p) >= middle) partial += p;
    }
    if (workgroup_sum(partial) >= target) low = middle;
    else high = middle - 1u;
  }
  partial = 0.0;
  uint above = 0u, tied = 0u;
  for (uint j = tid; j < n_keys; j += THREADS) {
    float p = probabilities[row + j];
    if (floatBitsToUint(p) > low) {
      partial += p;
      above += 1u;
    } else if (floatBitsToUint(p) == low) {
      tied += 1u;
    }
  }
  const float mass_above = workgroup_sum(partial);
  above = workgroup_count(above);
  tied = workgroup_count(tied);
  if (tid == 0u) {
    const float tau = uintBitsToFloat(low);
    const uint from_ties = tau > 0.0 ? uint(ceil(max(target - mass_above, 0.0) / tau)) : tied;
    keys_needed[i] = above + clamp(from_ties, min(1u, tied), tied);
  }
}
