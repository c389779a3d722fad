#version 460
// The whole top-k of a short row (at most ROW_CAPACITY candidates) in one
// workgroup: the row's keys are staged in shared memory once, then digit
// passes with the histogram in shared memory, then each invocation writes a
// contiguous segment after a scan of the segments' counts. One dispatch, where
// topk_digit/count/write take five.
//
// Staging issues PER_INVOCATION unconditional loads (load_keys) per
// invocation before storing any: a loop of guarded loads ran one memory
// latency per WORKGROUP candidates on the H100 (13 / 29 us for 2k / 8k).
// The digits start below the bits that every key of the row shares (those
// above the highest bit where its largest and smallest key differ), so that
// scores of one sign and size (Quest's page bounds) spread over the bins
// instead of piling onto a few.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(std430, binding = 0) readonly buffer Scores { float scores[]; };   // [rows, row_stride]
layout(std430, binding = 1) writeonly buffer Indices { int indices[]; };  // [rows, out_stride]

// Candidates a row may have: TOPK_ROW_MAX, or fewer where shared memory is
// smaller (engine/topk.cpp); a multiple of the workgroup (256).
layout(constant_id = 0) const uint ROW_CAPACITY = TOPK_ROW_MAX;
shared uint row_keys[ROW_CAPACITY + ROW_CAPACITY / 32u];  // padded: topk_common.glsl's staged()
#define TOPK_STAGED
uint staged(uint i);
uint candidate_key(uint row, uint i) { return row_keys[staged(i)]; }

#define TOPK_WRITES
#include "topk_common.glsl"

shared uint histogram[TOPK_BINS];

void main() {
  const uint tid = gl_LocalInvocationIndex, row = gl_WorkGroupID.y;
  if (!write_padding_and_trivial_rows(row, 0u, pc.n, true)) return;

  // Stage the keys, and find the row's largest key and the complement of its
  // smallest (reduced in exclusive_scan's buffer).
  uvec2 extremes = uvec2(0u);
  for (uint first = 0u; first < pc.n; first += PER_INVOCATION * WORKGROUP) {
    uint keys[PER_INVOCATION];
    load_keys(row, first, keys);
    [[unroll]] for (uint e = 0u; e < PER_INVOCATION; ++e) {
      const uint i = first + e * WORKGROUP + tid;
      if (i < pc.n) row_keys[staged(i)] = keys[e];
      extremes = max(extremes, uvec2(keys[e], ~keys[e]));  // clamped loads repeat the last key: harmless here
    }
  }
  scan_buffer[tid] = extremes;
  barrier();
  for (uint stride = WORKGROUP / 2u; stride > 0u; stride /= 2u) {
    if (tid < stride) scan_buffer[tid] = max(scan_buffer[tid], scan_buffer[tid + stride]);
    barrier();
  }
  extremes = scan_buffer[0];
  barrier();
  const uint differ = extremes.x ^ ~extremes.y;  // bits where the largest and smallest key differ

  // Every key holds the prefix (the bits above `top`); each level fixes the next
  // (up to) 11 bits below it: at most three levels, none when all keys are equal.
  int top = findMSB(differ);  // -1: every key is equal
  uint mask = top < 0 ? 0xffffffffu : top == 31 ? 0u : ~((2u << uint(top)) - 1u);
  uint prefix = extremes.x & mask, remaining = pc.k;
  while (top >= 0) {
    const uint shift = uint(max(top - 10, 0)), digit_mask = (2u << (uint(top) - shift)) - 1u;
    for (uint b = tid; b < TOPK_BINS; b += WORKGROUP) histogram[b] = 0u;
    barrier();
    for (uint i = tid; i < pc.n; i += WORKGROUP) {
      const uint key = row_keys[staged(i)];
      if ((key & mask) == prefix) atomicAdd(histogram[(key >> shift) & digit_mask], 1u);
    }
    barrier();
    uint counts[BINS_PER_INVOCATION];
    [[unroll]] for (uint j = 0u; j < BINS_PER_INVOCATION; ++j)
      counts[j] = histogram[TOPK_BINS - 1u - (tid * BINS_PER_INVOCATION + j)];
    uvec2 chosen = choose_bin(counts, remaining);
    prefix |= chosen.x << shift;
    mask |= digit_mask << shift;
    remaining -= chosen.y;
    top = int(shift) - 1;
  }

  const uint segment = (pc.n + WORKGROUP - 1u) / WORKGROUP;
  const uint first = min(tid * segment, pc.n), end = min(first + segment, pc.n);
  uvec2 total;
  uvec2 earlier = exclusive_scan(count_range(row, first, end, prefix), total);
  write_range(row, first, end, prefix, remaining, earlier);
}
