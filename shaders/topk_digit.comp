#version 460
// One digit of a long row's radix select: each workgroup histograms the digit
// of its slice's keys that still match the prefix fixed so far and adds the
// histogram to the row's; the workgroup that arrives last reads (and clears)
// the row's histogram, finds the digit holding the k-th largest key and extends
// the prefix. Clearing as it reads leaves the state zeroed for the next use.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(std430, binding = 0) readonly buffer Scores { float scores[]; };        // [rows, row_stride]
layout(std430, binding = 1) coherent buffer SelectState { uint select_state[]; };  // [rows, TOPK_ROW_WORDS]

#include "topk_common.glsl"

shared uint histogram[TOPK_BINS];

uint digit_shift(uint level) { return level == 0u ? 21u : level == 1u ? 10u : 0u; }
shared bool arrived_last;

void main() {
  const uint tid = gl_LocalInvocationIndex, slice = gl_WorkGroupID.x, row = gl_WorkGroupID.y;
  if (pc.n <= pc.k || pc.k == 0u) return;
  const uint shift = digit_shift(pc.level);
  const uint state = row * TOPK_ROW_WORDS;
  uint prefix = 0u, mask = 0u, remaining = pc.k;
  if (pc.level > 0u) {
    prefix = select_state[state + TOPK_STATE_PREFIX];
    mask = select_state[state + TOPK_STATE_MASK];
    remaining = select_state[state + TOPK_STATE_REMAINING];
  }

  for (uint b = tid; b < TOPK_BINS; b += WORKGROUP) histogram[b] = 0u;
  barrier();
  const uint first = slice * SLICE;
  uint keys[PER_INVOCATION];
  load_keys(row, first, keys);
  [[unroll]] for (uint e = 0u; e < PER_INVOCATION; ++e)
    if (first + e * WORKGROUP + tid < pc.n && (keys[e] & mask) == prefix)
      atomicAdd(histogram[(keys[e] >> shift) & (TOPK_BINS - 1u)], 1u);
  barrier();
  for (uint b = tid; b < TOPK_BINS; b += WORKGROUP) {
    uint count = histogram[b];
    if (count != 0u) atomicAdd(select_state[state + TOPK_STATE_HISTOGRAM + b], count);
  }
  memoryBarrierBuffer();  // this workgroup's additions before its arrival
  barrier();
  if (tid == 0u) arrived_last = atomicAdd(select_state[state + TOPK_STATE_ARRIVED], 1u) == pc.slices - 1u;
  barrier();
  if (!arrived_last) return;
  memoryBarrierBuffer();

  uint counts[BINS_PER_INVOCATION];
  [[unroll]] for (uint j = 0u; j < BINS_PER_INVOCATION; ++j)
    counts[j] = atomicExchange(
        select_state[state + TOPK_STATE_HISTOGRAM + TOPK_BINS - 1u - (tid * BINS_PER_INVOCATION + j)], 0u);
  uvec2 chosen = choose_bin(counts, remaining);
  if (tid == 0u) {
    select_state[state + TOPK_STATE_PREFIX] = prefix | (chosen.x << shift);
    select_state[state + TOPK_STATE_MASK] = mask | ((TOPK_BINS - 1u) << shift);
    select_state[state + TOPK_STATE_REMAINING] = remaining - chosen.y;
    select_state[state + TOPK_STATE_ARRIVED] = 0u;
  }
}
