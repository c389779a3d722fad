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

// A workgroup per KV head and PAGES pages. A page's channels are split into
// PARTS parts on invocations PAGES apart, each part taking every PARTS-th
// tile of 8 channels, so that a warp still reads contiguous runs of a channel
// row, each invocation has a part of the loads, and a bound, loaded once,
// serves a batch of the group's heads; the parts' sums meet in shared memory.
// On the H100 this beat an invocation per page and query head walking all 128
// channels (9.9 / 13.7 / 21.4 -> 6.7 / 9.5 / 18.8 us at 8k / 32k / 128k with
// the engine's choice of parts); bigger register arrays, more shared memory,
// a whole group per invocation, page-major or tile-major bounds, or a
// subgroupAdd per page were all slower (docs/perf-experiments.md).
layout(constant_id = 2) const uint PARTS = 4u;  // 2, 4 or 8: the engine picks by the dispatch's size (methods/quest.cpp)
const uint PAGES = 128u / PARTS, TILE = 8u, BATCH = 4u;
shared float batch_query[BATCH * HEAD_DIM];
shared float part_bound[BATCH][128];

// The bounds of channels c .. c + TILE - 1 of this invocation's page, raw.
void load_tile(uint base, uint c, out uvec2 raw[TILE]) {
  [[unroll]] for (uint i = 0u; i < TILE; ++i) {
    const uint at = (base + (c + i) * pc.n_pages) * PAIR_WORDS;
    raw[i] = uvec2(minmax[at], PAIR_WORDS == 2u ? minmax[at + 1u] : 0u);
  }
}

void main() {
  const uint part = gl_LocalInvocationIndex / PAGES, page = gl_WorkGroupID.x * PAGES + gl_LocalInvocationIndex % PAGES;
  const uint kv_head = gl_WorkGroupID.y, group = pc.n_heads / pc.n_kv_heads;
  const uint base = kv_head * HEAD_DIM * pc.n_pages + min(page, max(pc.n_candidates, 1u) - 1u);
  float aggregate = pc.aggregate == AGGREGATE_MEAN ? 0.0 : LOWEST_FLOAT;   // the page's part 0 holds it
  for (uint batch = 0u; batch < group; batch += BATCH) {
    const uint batch_heads = min(BATCH, group - batch);
    // Each tile's loads are issued before the previous tile is used, the first
    // before the queries are waited on, so that loads wait in pairs.
    uvec2 next[TILE];
    if (part * TILE < HEAD_DIM) load_tile(base, part * TILE, next);
    barrier();
    for (uint e = gl_LocalInvocationIndex; e < batch_heads * HEAD_DIM; e += gl_WorkGroupSize.x)
      batch_query[e] = head_query(kv_head * group + batch + e / HEAD_DIM, e % HEAD_DIM);
    barrier();
    float bound[BATCH];
    [[unroll]] for (uint h = 0u; h < BATCH; ++h) bound[h] = 0.0;
    for (uint c = part * TILE; c < HEAD_DIM; c += PARTS * TILE) {  // d is a multiple of 8
      vec2 bounds[TILE];
      [[unroll]] for (uint i = 0u; i < TILE; ++i) bounds[i] = unpack_pair(next[i]);
      if (c + PARTS * TILE < HEAD_DIM) load_tile(base, c + PARTS * TILE, next);
      [[unroll]] for (uint h = 0u; h < BATCH; ++h) {
        if (h < batch_heads) {
          [[unroll]] for (uint i = 0u; i < TILE; ++i) {
            const float q = batch_query[h * HEAD_DIM + c + i];
            bound[h] += max(q * bounds[i].x, q * bounds[i].y);
          }
        }
      }
    }
    [[unroll]] for (uint h = 0u; h < BATCH; ++h) part_bound[h][gl_LocalInvocationIndex] = bound[h];
    barrier();
    if (part != 0u || page >= pc.n_candidates) continue;
    [[unroll]] for (uint h = 0u; h < BATCH; ++h) {
      if (h < batch_heads) {
        const uint at = gl_LocalInvocationIndex;
        float sum = 0.0;
        for (uint k = 0u; k < PARTS; ++k) sum += part_bound[h][at + k * PAGES];
        if (pc.heads_per_row == 1u) scores[(kv_head * group + batch + h) * pc.row_stride + page] = sum;
        else aggregate = pc.aggregate == AGGREGATE_MEAN ? aggregate + sum / float(pc.heads_per_row) : max(aggregate, sum);
      }
    }
  }
  if (pc.heads_per_row != 1u && part == 0u && page < pc.n_candidates) scores[kv_head * pc.row_stride + page] = aggregate;
}
