#version 460
// SnapKV / H2O / SampleAttention step 2: each window row's log-sum-exp (log2
// units) from its splits' (max, sum) (window_row_stats.comp).
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"
#include "common.glsl"

layout(local_size_x = 128) in;

layout(std430, binding = 0) readonly buffer RowStats { vec2 row_stats[]; };  // [H, window_count, n_splits]
layout(std430, binding = 1) writeonly buffer LogSumExp { float lse[]; };     // [H, window_count]

layout(push_constant) uniform WindowPush { WINDOW_FIELDS } pc;

void main() {
  const uint row = gl_GlobalInvocationID.x;
  if (row >= pc.n_heads * pc.window_count) return;
  float m = LOWEST_FLOAT;
  for (uint split = 0u; split < pc.n_splits; ++split) m = max(m, row_stats[row * pc.n_splits + split].x);
  float sum = 0.0;
  for (uint split = 0u; split < pc.n_splits; ++split) {
    const vec2 stats = row_stats[row * pc.n_splits + split];
    sum += stats.y * exp2(stats.x - m);
  }
  lse[row] = m + log2(sum);
}
