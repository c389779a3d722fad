#version 460
// Combines the key splits of attention_partial or attention_decode, a
// workgroup per (head, query) row (merge_splits.glsl), for rows of more than
// ATTENTION_FEW_SPLITS splits whose decode kernel did not merge them itself.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"
#include "common.glsl"

layout(constant_id = 0) const uint HEAD_DIM = 128;  // at most 4 * WORKGROUP
layout(constant_id = 1) const uint WORKGROUP = 256;
layout(local_size_x_id = 1) in;

layout(std430, binding = 0) readonly buffer PartialOutput { vec4 partial_output[]; };  // [rows, n_splits, d]
layout(std430, binding = 1) readonly buffer PartialStats { vec2 partial_stats[]; };    // [rows, n_splits]
layout(std430, binding = 2) writeonly buffer Output { vec4 attention_output[]; };      // [rows, d]
layout(std430, binding = 3) writeonly buffer LogSumExp { float log_sum_exp[]; };        // [rows]

layout(push_constant) uniform AttentionMergePush { ATTENTION_MERGE_FIELDS } pc;

shared float group_max[WORKGROUP / (HEAD_DIM / 4u)];
shared float group_sum[WORKGROUP / (HEAD_DIM / 4u)];
shared float group_output[WORKGROUP * 4u];

vec4 load_partial_quad(uint e) { return partial_output[e / 4u]; }
void store_output_quad(uint e, vec4 value) { attention_output[e / 4u] = value; }

#include "merge_splits.glsl"

void main() {
  const uint row = gl_WorkGroupID.x;
  if (row >= pc.n_rows) return;
  merge_row(row);
}
