#version 460
// Quest's decode selection in one dispatch where a KV head has one row (MHA,
// or a list per KV head): every workgroup scores its pages of a KV head
// (quest_page_scores.glsl), and the head's last workgroup to finish selects
// the row's top pages from those scores as topk_row.comp does, writing them as
// tokens. A head's selection then starts while later heads are still being
// scored, and the step has one dependent stage fewer (a drain and a start,
// ~3 us on the H100). Rows of at most ROW_CAPACITY pages (methods/quest.cpp).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(constant_id = 0) const uint ROW_CAPACITY = TOPK_ROW_MAX;
// constant_id 1 is topk_common.glsl's SUBGROUPS.
layout(constant_id = 2) const uint HEAD_DIM = 128;
layout(constant_id = 3) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(constant_id = 4) const uint PARTS = 4u;

#define TOPK_WORKGROUP 512
#define TOPK_PUSH_DECLARED
const uint SCORE_WORKGROUP = TOPK_WORKGROUP;
layout(push_constant) uniform QuestPageTopKPush { QUEST_PAGE_TOPK_FIELDS } pc;

#include "common.glsl"
#include "load.glsl"
#include "head_query.glsl"
// Written here and read back by another workgroup: coherent, past the SM's cache.
layout(std430, binding = 2) coherent buffer Scores { float scores[]; };       // [rows, row_stride]
layout(std430, binding = 3) writeonly buffer Indices { int indices[]; };       // [rows, out_stride]
layout(std430, binding = 4) coherent buffer Arrivals { uint arrivals[]; };     // [G], zero between uses

shared uint row_keys[ROW_CAPACITY + ROW_CAPACITY / 32u];
uint staged(uint i) { return i + i / 32u; }
#define TOPK_CANDIDATES
uint candidate_key(uint i) { return row_keys[staged(i)]; }
uint candidate_index(uint i) { return i; }
#include "topk_common.glsl"

// The parts' sums live in the histogram (BATCH x SCORE_WORKGROUP = TOPK_BINS
// words), which the selection clears before its first use: the row's keys
// and both arrays would not fit 48 KiB apart.
#define PART_BOUND_STORE(h, i, v) histogram[(h) * SCORE_WORKGROUP + (i)] = floatBitsToUint(v)
#define PART_BOUND_LOAD(h, i) uintBitsToFloat(histogram[(h) * SCORE_WORKGROUP + (i)])
#include "quest_page_scores.glsl"

// Counts this workgroup in; true for the KV head's last, which also zeroes its count.
shared bool last_of_head;
bool arrive(uint kv_head) {
  memoryBarrierBuffer();
  barrier();
  if (gl_LocalInvocationIndex == 0u) {
    last_of_head = atomicAdd(arrivals[kv_head], 1u) == gl_NumWorkGroups.x - 1u;
    if (last_of_head) arrivals[kv_head] = 0u;
  }
  barrier();
  memoryBarrierBuffer();
  return last_of_head;
}

void main() {
  const uint kv_head = gl_WorkGroupID.y, tid = gl_LocalInvocationIndex;
  score_pages(gl_WorkGroupID.x, kv_head);
  if (!arrive(kv_head)) return;
  const uint row = kv_head;  // heads_per_row is the group: one row a KV head
  if (!write_padding_and_trivial_rows(row)) return;
  clear_histogram();
  // Eight loads in flight an invocation, clamped to the row's last score, as topk_row.comp stages.
  const uint PER_INVOCATION = 8u;
  uvec2 extremes = uvec2(0u);  // the row's largest key, and the complement of its smallest
  for (uint first = 0u; first < pc.n; first += PER_INVOCATION * WORKGROUP) {
    float values[PER_INVOCATION];
    [[unroll]] for (uint e = 0u; e < PER_INVOCATION; ++e)
      values[e] = scores[row * pc.row_stride + min(first + e * WORKGROUP + tid, pc.n - 1u)];
    [[unroll]] for (uint e = 0u; e < PER_INVOCATION; ++e) {
      const uint i = first + e * WORKGROUP + tid, key = orderable(values[e]);
      if (i < pc.n) row_keys[staged(i)] = key;
      extremes = max(extremes, uvec2(key, ~key));
    }
  }
  const Select select = select_within(pc.n, Select(0u, 0u, pc.k), workgroup_max(extremes));
  write_staged(row, pc.n, select.prefix, select.remaining);
  write_kept_pages(row);
}
