#version 460
// Combines the key splits of attention_partial for one (head, query) row:
// softmax-weighted sum of the partial outputs, and the row's log-sum-exp of
// the scaled logits (natural log), which the metrics turn into probabilities.
// The splits' (max, sum) are staged in shared memory and reduced as a tree;
// the weighted sum is split over WORKGROUP / HEAD_DIM groups of invocations,
// so a row of 128-256 splits costs a few memory latencies, not one per split.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"
#include "common.glsl"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint WORKGROUP = 256;
layout(local_size_x_id = 1) in;

layout(std430, binding = 0) readonly buffer PartialOutput { float partial_output[]; };  // [rows, n_splits, d]
layout(std430, binding = 1) readonly buffer PartialStats { vec2 partial_stats[]; };     // [rows, n_splits]
layout(std430, binding = 2) writeonly buffer Output { float output_[]; };               // [rows, d]
layout(std430, binding = 3) writeonly buffer LogSumExp { float log_sum_exp[]; };        // [rows]

layout(push_constant) uniform AttentionMergePush { ATTENTION_MERGE_FIELDS } pc;

const uint MAX_SPLITS = 256;  // the C++ owner never makes more
const uint GROUPS = WORKGROUP >= HEAD_DIM ? WORKGROUP / HEAD_DIM : 1u;

shared vec2 stats[MAX_SPLITS];
shared float weights[MAX_SPLITS];
shared float reduce[WORKGROUP];
shared float group_sums[GROUPS * HEAD_DIM];

// Tree reduction of one value per invocation: max (is_max) or sum.
float workgroup_reduce(float value, bool is_max) {
  const uint tid = gl_LocalInvocationIndex;
  reduce[tid] = value;
  barrier();
  for (uint stride = WORKGROUP / 2u; stride > 0u; stride /= 2u) {
    if (tid < stride) reduce[tid] = is_max ? max(reduce[tid], reduce[tid + stride]) : reduce[tid] + reduce[tid + stride];
    barrier();
  }
  float result = reduce[0];
  barrier();
  return result;
}

void main() {
  const uint row = gl_WorkGroupID.x, tid = gl_LocalInvocationIndex;
  if (row >= pc.n_rows) return;
  float local_max = LOWEST_FLOAT;
  for (uint s = tid; s < pc.n_splits; s += WORKGROUP) {
    stats[s] = partial_stats[row * pc.n_splits + s];
    local_max = max(local_max, stats[s].x);
  }
  const float row_max = workgroup_reduce(local_max, true);
  float local_sum = 0.0;
  for (uint s = tid; s < pc.n_splits; s += WORKGROUP) {
    float w = stats[s].x == LOWEST_FLOAT ? 0.0 : exp2(stats[s].x - row_max);
    weights[s] = w;
    local_sum += stats[s].y * w;
  }
  const float row_sum = workgroup_reduce(local_sum, false);  // its barriers also publish weights[]

  for (uint c0 = 0u; c0 < HEAD_DIM; c0 += min(WORKGROUP, HEAD_DIM)) {
    const uint c = c0 + tid % min(WORKGROUP, HEAD_DIM), group = tid / min(WORKGROUP, HEAD_DIM);
    float sum = 0.0;
    if (c < HEAD_DIM && group < GROUPS)
      for (uint s = group; s < pc.n_splits; s += GROUPS)
        sum += partial_output[(row * pc.n_splits + s) * HEAD_DIM + c] * weights[s];
    if (group < GROUPS && c < HEAD_DIM) group_sums[group * HEAD_DIM + c] = sum;
    barrier();
    if (group == 0u && c < HEAD_DIM) {
      float total = 0.0;
      for (uint g = 0u; g < GROUPS; ++g) total += group_sums[g * HEAD_DIM + c];
      output_[row * HEAD_DIM + c] = total / row_sum;
    }
    barrier();
  }
  if (tid == 0u) log_sum_exp[row] = (row_max + log2(row_sum)) * 0.6931471805599453;
}
