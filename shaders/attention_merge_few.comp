#version 460
// Combines a few key splits (at most MAX_SPLITS; a prefill chunk's) of
// attention_partial or attention_chunk, one invocation per (row, 4 channels):
// each reads its row's (max, sum) of every split itself (the same words as its
// neighbours', so one load serves a subgroup), so no invocation waits on
// another. A workgroup takes WORKGROUP / (d / 4) rows. attention_merge.comp,
// a workgroup per row, serves rows of many splits (decode), where this would
// read every split's stats per 4 channels.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"
#include "common.glsl"

layout(constant_id = 0) const uint HEAD_DIM = 128;  // a multiple of 8, at most 4 * WORKGROUP
layout(constant_id = 1) const uint WORKGROUP = 128;
layout(local_size_x_id = 1) in;

layout(std430, binding = 0) readonly buffer PartialOutput { vec4 partial_output[]; };  // [rows, n_splits, d]
layout(std430, binding = 1) readonly buffer PartialStats { vec2 partial_stats[]; };    // [rows, n_splits]
layout(std430, binding = 2) writeonly buffer Output { vec4 output_[]; };               // [rows, d]
layout(std430, binding = 3) writeonly buffer LogSumExp { float log_sum_exp[]; };        // [rows]

layout(push_constant) uniform AttentionMergePush { ATTENTION_MERGE_FIELDS } pc;

const uint MAX_SPLITS = ATTENTION_FEW_SPLITS;
const uint QUADS = HEAD_DIM / 4u;
const uint ROWS = WORKGROUP / QUADS;

void main() {
  const uint row = gl_WorkGroupID.x * ROWS + gl_LocalInvocationIndex / QUADS, quad = gl_LocalInvocationIndex % QUADS;
  if (row >= pc.n_rows || gl_LocalInvocationIndex >= ROWS * QUADS) return;
  vec2 stats[MAX_SPLITS];
  float row_max = LOWEST_FLOAT;
  [[unroll]] for (uint s = 0u; s < MAX_SPLITS; ++s) {
    stats[s] = s < pc.n_splits ? partial_stats[row * pc.n_splits + s] : vec2(LOWEST_FLOAT, 0.0);
    row_max = max(row_max, stats[s].x);
  }
  float row_sum = 0.0;
  vec4 total = vec4(0.0);
  [[unroll]] for (uint s = 0u; s < MAX_SPLITS; ++s) {
    if (s >= pc.n_splits) break;
    const float w = stats[s].x == LOWEST_FLOAT ? 0.0 : exp2(stats[s].x - row_max);
    row_sum += stats[s].y * w;
    total += partial_output[(row * pc.n_splits + s) * QUADS + quad] * w;
  }
  output_[row * QUADS + quad] = total / row_sum;
  if (quad == 0u) log_sum_exp[row] = (row_max + log2(row_sum)) * 0.6931471805599453;
}
