#version 460
// Exact top-k of one row of scores per workgroup: a radix select over the
// scores as order-preserving 32-bit keys (four 8-bit digit passes find the k-th
// largest key), then a compaction in index order that keeps every score above
// it and the first of those equal to it, so ties go to the lower index and the
// output is ascending. No sort of the row. The compaction gives each invocation
// a contiguous segment: count, one scan over the invocations, write.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint WORKGROUP = 256;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Scores { float scores[]; };  // [rows, row_stride]
layout(std430, binding = 1) writeonly buffer Indices { int indices[]; };  // [rows, out_stride]

layout(push_constant) uniform TopKPush { TOPK_FIELDS } pc;

shared uint histogram[256];
shared uint chosen_digit;
shared uint chosen_remaining;
shared uvec2 segment_offsets[WORKGROUP];  // (selected, equal) before each segment

// Larger float, larger key; -0 counts as +0 and NaN as the lowest score.
uint orderable(float f) {
  if (isnan(f)) return 0u;
  uint u = floatBitsToUint(f == 0.0 ? 0.0 : f);
  return (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u);
}

void main() {
  const uint tid = gl_LocalInvocationIndex;
  const uint base = gl_WorkGroupID.x * pc.row_stride;
  const uint out_base = gl_WorkGroupID.x * pc.out_stride;
  const uint k = min(pc.k, pc.n);

  for (uint i = k + tid; i < pc.out_stride; i += WORKGROUP) indices[out_base + i] = -1;
  if (pc.n <= pc.k) {
    for (uint i = tid; i < pc.n; i += WORKGROUP) indices[out_base + i] = int(i);
    return;
  }
  if (k == 0u) return;

  // After the loop, `prefix` is the k-th largest key and `remaining` how many
  // keys equal to it belong to the top k.
  uint prefix = 0u, prefix_mask = 0u, remaining = k;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (uint i = tid; i < 256u; i += WORKGROUP) histogram[i] = 0u;
    barrier();
    for (uint i = tid; i < pc.n; i += WORKGROUP) {
      uint key = orderable(scores[base + i]);
      if ((key & prefix_mask) == prefix) atomicAdd(histogram[(key >> uint(shift)) & 255u], 1u);
    }
    barrier();
    if (tid == 0u) {
      uint above = 0u, digit = 255u;
      while (digit > 0u && above + histogram[digit] < remaining) above += histogram[digit--];
      chosen_digit = digit;
      chosen_remaining = remaining - above;
    }
    barrier();
    prefix |= chosen_digit << uint(shift);
    prefix_mask |= 255u << uint(shift);
    remaining = chosen_remaining;
    barrier();
  }

  const uint segment = (pc.n + WORKGROUP - 1u) / WORKGROUP;
  const uint first = min(tid * segment, pc.n), last = min(first + segment, pc.n);
  uint greater_count = 0u, equal_count = 0u;
  for (uint i = first; i < last; ++i) {
    uint key = orderable(scores[base + i]);
    greater_count += key > prefix ? 1u : 0u;
    equal_count += key == prefix ? 1u : 0u;
  }
  segment_offsets[tid] = uvec2(greater_count, equal_count);
  barrier();
  if (tid == 0u) {  // exclusive scan of (selected, equal) over the segments, in index order
    uint equal_before = 0u, selected_before = 0u;
    for (uint t = 0u; t < WORKGROUP; ++t) {
      uvec2 counts = segment_offsets[t];
      uint taken_equal = min(counts.y, remaining - min(remaining, equal_before));
      segment_offsets[t] = uvec2(selected_before, equal_before);
      selected_before += counts.x + taken_equal;
      equal_before += counts.y;
    }
  }
  barrier();
  uint slot = segment_offsets[tid].x, equal_rank = segment_offsets[tid].y;
  for (uint i = first; i < last; ++i) {
    uint key = orderable(scores[base + i]);
    bool take = key > prefix;
    if (key == prefix) take = equal_rank++ < remaining;
    if (take) indices[out_base + slot++] = int(i);
  }
}
