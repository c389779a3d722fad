#version 460
// SnapKV / H2O step 2: per KV head and candidate key j, the window's attention
// sum_{h in g} sum_{i in window, j <= position_i} p_{h,i,j}, with the
// probabilities normalised by window_log_sum_exp.comp. One dispatch covers a
// slice of the window's rows; later slices add to the first's sums, so that
// no invocation outruns a loop limit (vk::DeviceInfo::loop_limit; the host
// counts this kernel's loops per row: window_row_iterations in
// engine/methods/window_methods.cpp).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };  // [H, window_count, d], the window's rows
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };        // [G, T, d]
layout(std430, binding = 2) readonly buffer LogSumExp { float lse[]; };    // [H, window_count], log2 units
layout(std430, binding = 3) buffer Scores { float scores[]; };   // [G, row_stride]

layout(push_constant) uniform WindowPush { WINDOW_FIELDS } pc;

DEFINE_LOAD8(load_query, queries)
DEFINE_LOAD8(load_key, keys)

shared float query[HEAD_DIM];

void main() {
  const uint g = gl_WorkGroupID.y, j = gl_GlobalInvocationID.x, r = pc.n_heads / pc.n_kv_heads;
  float total = 0.0;
  for (uint head = g * r; head < (g + 1u) * r; ++head)
    for (uint i = pc.slice_first; i < pc.slice_first + pc.slice_count; ++i) {
      const uint position = pc.window_first + i * pc.window_stride;
      barrier();  // the previous query is no longer read
      for (uint chunk = gl_LocalInvocationIndex; chunk < HEAD_DIM / 8u; chunk += 128u) {
        vec4 lo, hi;
        load_query((head * pc.window_count + i) * HEAD_DIM + chunk * 8u, lo, hi);
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
          query[chunk * 8u + c] = lo[c] * pc.scale_log2;
          query[chunk * 8u + 4u + c] = hi[c] * pc.scale_log2;
        }
      }
      barrier();
      if (j >= pc.n_candidates || j > position) continue;
      float s = 0.0;
      for (uint chunk = 0u; chunk < HEAD_DIM / 8u; ++chunk) {
        vec4 lo, hi;
        load_key((g * pc.n_tokens + j) * HEAD_DIM + chunk * 8u, lo, hi);
        [[unroll]] for (uint c = 0u; c < 4u; ++c) s += query[chunk * 8u + c] * lo[c] + query[chunk * 8u + 4u + c] * hi[c];
      }
      total += exp2(s - lse[head * pc.window_count + i]);
    }
  if (j < pc.n_candidates) {
    const uint at = g * pc.row_stride + j;
    scores[at] = pc.slice_first == 0u ? total : scores[at] + total;
  }
}
