#version 460
// Combines the key splits of attention_partial for one (head, query) row:
// softmax-weighted sum of the partial outputs, and the row's log-sum-exp of
// the scaled logits (natural log), which the metrics turn into probabilities.
// The row's max and sum over the splits are subgroup reductions that meet in
// shared memory (a barrier each; the tree of barriers before took most of the
// merge's 7 us at 32k on the H100). Then invocations own 4 channels of the
// output and every GROUPS-th split, and the groups' sums meet in shared memory.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
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

const uint MAX_SPLITS = 256;  // the C++ owner never makes more
const uint QUADS = HEAD_DIM / 4u;
const uint GROUPS = WORKGROUP / QUADS;

shared float subgroup_results[WORKGROUP];  // one per subgroup
shared float weights[MAX_SPLITS];
shared vec4 group_sums[GROUPS * QUADS];

// The workgroup's max (is_max) or sum of one value per invocation.
float workgroup_reduce(float value, bool is_max) {
  value = is_max ? subgroupMax(value) : subgroupAdd(value);
  if (subgroupElect()) subgroup_results[gl_SubgroupID] = value;
  barrier();
  float result = subgroup_results[0];
  for (uint i = 1u; i < gl_NumSubgroups; ++i)
    result = is_max ? max(result, subgroup_results[i]) : result + subgroup_results[i];
  barrier();  // every invocation has read the results before the next reduction writes them
  return result;
}

void main() {
  const uint row = gl_WorkGroupID.x, tid = gl_LocalInvocationIndex;
  if (row >= pc.n_rows) return;
  float local_max = LOWEST_FLOAT;
  for (uint s = tid; s < pc.n_splits; s += WORKGROUP) local_max = max(local_max, partial_stats[row * pc.n_splits + s].x);
  const float row_max = workgroup_reduce(local_max, true);
  float local_sum = 0.0;
  for (uint s = tid; s < pc.n_splits; s += WORKGROUP) {
    const vec2 stats = partial_stats[row * pc.n_splits + s];
    const float w = stats.x == LOWEST_FLOAT ? 0.0 : exp2(stats.x - row_max);
    weights[s] = w;
    local_sum += stats.y * w;
  }
  const float row_sum = workgroup_reduce(local_sum, false);  // its barriers also publish weights[]

  const uint quad = tid % QUADS, group = tid / QUADS;
  if (group < GROUPS) {
    vec4 sum = vec4(0.0);
    for (uint s = group; s < pc.n_splits; s += GROUPS) sum += partial_output[(row * pc.n_splits + s) * QUADS + quad] * weights[s];
    group_sums[group * QUADS + quad] = sum;
  }
  barrier();
  if (tid < QUADS) {
    vec4 total = vec4(0.0);
    for (uint g = 0u; g < GROUPS; ++g) total += group_sums[g * QUADS + tid];
    output_[row * QUADS + tid] = total / row_sum;
  }
  if (tid == 0u) log_sum_exp[row] = (row_max + log2(row_sum)) * 0.6931471805599453;
}
