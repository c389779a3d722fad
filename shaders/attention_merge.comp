#version 460
// Combines the key splits of attention_partial for one (head, query) row:
// softmax-weighted sum of the partial outputs, and the row's log-sum-exp of
// the scaled logits (natural log), which the metrics turn into probabilities.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"
#include "common.glsl"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint WORKGROUP = 64;
layout(local_size_x_id = 1) in;

layout(std430, binding = 0) readonly buffer PartialOutput { float partial_output[]; };  // [rows, n_splits, d]
layout(std430, binding = 1) readonly buffer PartialStats { vec2 partial_stats[]; };     // [rows, n_splits]
layout(std430, binding = 2) writeonly buffer Output { float output_[]; };               // [rows, d]
layout(std430, binding = 3) writeonly buffer LogSumExp { float log_sum_exp[]; };        // [rows]

layout(push_constant) uniform AttentionMergePush { ATTENTION_MERGE_FIELDS } pc;

float split_weight(float split_max, float row_max) {
  return split_max == LOWEST_FLOAT ? 0.0 : exp2(split_max - row_max);
}

void main() {
  const uint row = gl_WorkGroupID.x;
  if (row >= pc.n_rows) return;
  float row_max = LOWEST_FLOAT;
  for (uint s = 0; s < pc.n_splits; ++s) row_max = max(row_max, partial_stats[row * pc.n_splits + s].x);
  float row_sum = 0.0;
  for (uint s = 0; s < pc.n_splits; ++s) {
    vec2 stats = partial_stats[row * pc.n_splits + s];
    row_sum += stats.y * split_weight(stats.x, row_max);
  }
  for (uint c = gl_LocalInvocationIndex; c < HEAD_DIM; c += WORKGROUP) {
    float sum = 0.0;
    for (uint s = 0; s < pc.n_splits; ++s)
      sum += partial_output[(row * pc.n_splits + s) * HEAD_DIM + c] *
             split_weight(partial_stats[row * pc.n_splits + s].x, row_max);
    output_[row * HEAD_DIM + c] = sum / row_sum;
  }
  if (gl_LocalInvocationIndex == 0) log_sum_exp[row] = (row_max + log2(row_sum)) * 0.6931471805599453;
}
