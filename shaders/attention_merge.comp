#version 460
// Combines the key splits of attention_partial for one (head, query) row:
// softmax-weighted sum of the partial outputs, and the row's log-sum-exp of
// the scaled logits (natural log), which the metrics turn into probabilities.
// Invocations own 4 channels of the output and every GROUPS-th split. Each
// issues the loads of a batch of its splits (their (max, sum) and its channels)
// before it uses any, and keeps a running max, sum and output over its splits,
// so a row costs one round of loads and one barrier, after which the groups'
// results meet in shared memory. (Before, the row's max and sum were workgroup
// reductions over the splits' stats and the outputs were read after them: two
// rounds of loads and five barriers.)
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"
#include "common.glsl"

layout(constant_id = 0) const uint HEAD_DIM = 128;  // at most 4 * WORKGROUP
layout(constant_id = 1) const uint WORKGROUP = 256;
layout(local_size_x_id = 1) in;

layout(std430, binding = 0) readonly buffer PartialOutput { vec4 partial_output[]; };  // [rows, n_splits, d]
layout(std430, binding = 1) readonly buffer PartialStats { vec2 partial_stats[]; };    // [rows, n_splits]
layout(std430, binding = 2) writeonly buffer Output { vec4 output_[]; };               // [rows, d]
layout(std430, binding = 3) writeonly buffer LogSumExp { float log_sum_exp[]; };       // [rows]

layout(push_constant) uniform AttentionMergePush { ATTENTION_MERGE_FIELDS } pc;

const uint QUADS = HEAD_DIM / 4u;
const uint GROUPS = WORKGROUP / QUADS;
const uint BATCH = 8;  // splits a group loads before using any

shared float group_max[GROUPS];
shared float group_sum[GROUPS];
shared vec4 group_output[GROUPS * QUADS];

void main() {
  const uint row = gl_WorkGroupID.x, tid = gl_LocalInvocationIndex;
  if (row >= pc.n_rows) return;
  const uint quad = tid % QUADS, group = tid / QUADS;
  float running_max = LOWEST_FLOAT, running_sum = 0.0;
  vec4 running_output = vec4(0.0);
  if (group < GROUPS) {
    for (uint first = group; first < pc.n_splits; first += GROUPS * BATCH) {
      vec2 stats[BATCH];
      vec4 partial[BATCH];
      [[unroll]] for (uint b = 0; b < BATCH; ++b) {
        const uint s = first + b * GROUPS;
        stats[b] = vec2(LOWEST_FLOAT, 0.0);
        partial[b] = vec4(0.0);
        if (s < pc.n_splits) {
          stats[b] = partial_stats[row * pc.n_splits + s];
          partial[b] = partial_output[(row * pc.n_splits + s) * QUADS + quad];
        }
      }
      float new_max = running_max;
      [[unroll]] for (uint b = 0; b < BATCH; ++b) new_max = max(new_max, stats[b].x);
      const float alpha = exp2(running_max - new_max);  // 1 while both are LOWEST_FLOAT, with nothing to scale
      running_max = new_max;
      running_sum *= alpha;
      running_output *= alpha;
      [[unroll]] for (uint b = 0; b < BATCH; ++b) {
        const float w = stats[b].x == LOWEST_FLOAT ? 0.0 : exp2(stats[b].x - new_max);
        running_sum += stats[b].y * w;
        running_output += partial[b] * w;
      }
    }
    if (quad == 0u) {
      group_max[group] = running_max;
      group_sum[group] = running_sum;
    }
    group_output[group * QUADS + quad] = running_output;
  }
  barrier();
  if (tid < QUADS) {
    float row_max = LOWEST_FLOAT;
    [[unroll]] for (uint g = 0u; g < GROUPS; ++g) row_max = max(row_max, group_max[g]);
    float row_sum = 0.0;
    vec4 total = vec4(0.0);
    [[unroll]] for (uint g = 0u; g < GROUPS; ++g) {
      const float w = group_max[g] == LOWEST_FLOAT ? 0.0 : exp2(group_max[g] - row_max);
      row_sum += group_sum[g] * w;
      total += group_output[g * QUADS + tid] * w;
    }
    output_[row * QUADS + tid] = total / row_sum;
    if (tid == 0u) log_sum_exp[row] = (row_max + log2(row_sum)) * 0.6931471805599453;
  }
}
