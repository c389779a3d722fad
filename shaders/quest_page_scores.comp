#version 460
// Quest page scores: u_p = sum_c max(q_c M_p[c], q_c m_p[c]), an upper bound of
// q . k over the page's keys. Per query head, or aggregated (max or mean) over
// the group's heads when a row stands for a KV head.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(local_size_x = 128) in;

#include "common.glsl"

layout(std430, binding = 0) readonly buffer MeanQuery { float query[]; };    // [H, d]
layout(std430, binding = 1) readonly buffer PageMinMax { float minmax[]; };  // [G, 2, d, n_pages]
layout(std430, binding = 2) writeonly buffer Scores { float scores[]; };     // [rows, row_stride]

layout(push_constant) uniform PageScoresPush { PAGE_SCORES_FIELDS } pc;

shared float head_query[HEAD_DIM];

void main() {
  const uint row = gl_WorkGroupID.y, page = gl_GlobalInvocationID.x;
  const uint first_head = row * pc.heads_per_row;
  const uint kv_head = first_head / (pc.n_heads / pc.n_kv_heads);
  const uint max_base = kv_head * 2u * HEAD_DIM * pc.n_pages + page, min_base = max_base + HEAD_DIM * pc.n_pages;
  float aggregate = pc.aggregate == AGGREGATE_MEAN ? 0.0 : LOWEST_FLOAT;
  for (uint h = first_head; h < first_head + pc.heads_per_row; ++h) {
    barrier();
    for (uint c = gl_LocalInvocationIndex; c < HEAD_DIM; c += 128u) head_query[c] = query[h * HEAD_DIM + c];
    barrier();
    if (page >= pc.n_candidates) continue;
    float bound = 0.0;
    for (uint c = 0u; c < HEAD_DIM; ++c)
      bound += max(head_query[c] * minmax[max_base + c * pc.n_pages], head_query[c] * minmax[min_base + c * pc.n_pages]);
    aggregate = pc.aggregate == AGGREGATE_MEAN ? aggregate + bound / float(pc.heads_per_row) : max(aggregate, bound);
  }
  if (page < pc.n_candidates) scores[row * pc.row_stride + page] = aggregate;
}
