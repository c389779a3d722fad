#version 460
// Quest page scores: u_p = sum_c max(q_c M_p[c], q_c m_p[c]), an upper bound of
// q . k over the page's keys. Per query head, or aggregated (max or mean) over
// the group's heads when a row stands for a KV head.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "common.glsl"
#include "load.glsl"

layout(push_constant) uniform PageScoresPush { PAGE_SCORES_FIELDS } pc;

#include "head_query.glsl"
layout(std430, binding = 1) readonly buffer PageMinMax { uint minmax[]; };  // [G, d, n_pages] (max, min) pairs
layout(std430, binding = 2) writeonly buffer Scores { float scores[]; };     // [rows, row_stride]

// One workgroup per row and 128 pages. (One workgroup serving a group's four
// heads per read of the bounds measured slower on the H100: 21 against 18 us
// at 32k; docs/perf.md, session 5.)
shared float row_query[HEAD_DIM];

void main() {
  const uint row = gl_WorkGroupID.y, page = gl_GlobalInvocationID.x;
  const uint first_head = row * pc.heads_per_row;
  const uint kv_head = first_head / (pc.n_heads / pc.n_kv_heads);
  const uint base = kv_head * HEAD_DIM * pc.n_pages + page;
  float aggregate = pc.aggregate == AGGREGATE_MEAN ? 0.0 : LOWEST_FLOAT;
  for (uint h = first_head; h < first_head + pc.heads_per_row; ++h) {
    barrier();
    for (uint c = gl_LocalInvocationIndex; c < HEAD_DIM; c += 128u) row_query[c] = head_query(h, c);
    barrier();
    if (page >= pc.n_candidates) continue;
    float bound = 0.0;
    [[unroll]] for (uint c = 0u; c < HEAD_DIM; c += 8u) {  // d is a multiple of 8
      vec2 bounds[8];   // loads issued before any is used
      [[unroll]] for (uint i = 0u; i < 8u; ++i) {
        const uint at = (base + (c + i) * pc.n_pages) * PAIR_WORDS;
        bounds[i] = unpack_pair(uvec2(minmax[at], PAIR_WORDS == 2u ? minmax[at + 1u] : 0u));
      }
      [[unroll]] for (uint i = 0u; i < 8u; ++i)
        bound += max(row_query[c + i] * bounds[i].x, row_query[c + i] * bounds[i].y);
    }
    aggregate = pc.aggregate == AGGREGATE_MEAN ? aggregate + bound / float(pc.heads_per_row) : max(aggregate, bound);
  }
  if (page < pc.n_candidates) scores[row * pc.row_stride + page] = aggregate;
}
