#version 460
// SnapKV / H2O step 1: the log-sum-exp (log2 units) of each window query's
// scaled logits over its causal keys [0, position]; one workgroup per
// (window query, head), online max and sum per invocation, then a tree.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"
#include "common.glsl"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };  // [H, window_count, d], the window's rows
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };        // [G, T, d]
layout(std430, binding = 2) writeonly buffer LogSumExp { float lse[]; };   // [H, window_count], log2 units

layout(push_constant) uniform WindowPush { WINDOW_FIELDS } pc;

DEFINE_LOAD8(load_query, queries)
DEFINE_LOAD8(load_key, keys)

shared float query[HEAD_DIM];
shared float maxima[128];
shared float sums[128];

void main() {
  const uint i = gl_WorkGroupID.x, head = gl_WorkGroupID.y, tid = gl_LocalInvocationIndex;
  const uint position = pc.window_first + i * pc.window_stride, kv_head = head / (pc.n_heads / pc.n_kv_heads);
  for (uint chunk = tid; chunk < HEAD_DIM / 8u; chunk += 128u) {
    vec4 lo, hi;
    load_query((head * pc.window_count + i) * HEAD_DIM + chunk * 8u, lo, hi);
    for (uint c = 0u; c < 4u; ++c) {
      query[chunk * 8u + c] = lo[c] * pc.scale_log2;
      query[chunk * 8u + 4u + c] = hi[c] * pc.scale_log2;
    }
  }
  barrier();
  float row_max = LOWEST_FLOAT, row_sum = 0.0;
  for (uint j = tid; j <= position; j += 128u) {
    float s = 0.0;
    for (uint chunk = 0u; chunk < HEAD_DIM / 8u; ++chunk) {
      vec4 lo, hi;
      load_key((kv_head * pc.n_tokens + j) * HEAD_DIM + chunk * 8u, lo, hi);
      [[unroll]] for (uint c = 0u; c < 4u; ++c) s += query[chunk * 8u + c] * lo[c] + query[chunk * 8u + 4u + c] * hi[c];
    }
    const float new_max = max(row_max, s);
    row_sum = row_sum * exp2(row_max - new_max) + exp2(s - new_max);
    row_max = new_max;
  }
  maxima[tid] = row_max;
  sums[tid] = row_sum;
  barrier();
  for (uint width = 64u; width > 0u; width /= 2u) {
    if (tid < width) {
      const float a = maxima[tid], b = maxima[tid + width], m = max(a, b);
      sums[tid] = sums[tid] * exp2(a - m) + sums[tid + width] * exp2(b - m);
      maxima[tid] = m;
    }
    barrier();
  }
  if (tid == 0u) lse[head * pc.window_count + i] = maxima[0] + log2(sums[0]);
}
