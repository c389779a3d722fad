#version 460
// The whole top-k of a short row (at most ROW_CAPACITY candidates) in one
// workgroup: the row's keys are staged in shared memory once, then the radix
// select's levels run there (topk_common.glsl's select_staged), then each
// invocation writes a contiguous segment after a scan of the segments' counts.
//
// Staging issues PER_INVOCATION unconditional loads per invocation before
// storing any: a loop of guarded loads ran one memory latency per WORKGROUP
// candidates on the H100 (13 / 29 us for 2k / 8k).
//
// 512 invocations: every phase here is a chain of barriers and shared-memory
// passes whose per-invocation loops shorten as the workgroup grows. On the
// H100 the top-k of rows of 2048 / 8192 took 12.2 / 18.5 us at 256
// invocations, 10.8-11.1 / 14.7-14.8 at 512 and 11.4 / 13.7-13.8 at 1024
// (docs/perf-experiments.md).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(std430, binding = 0) readonly buffer Scores { float scores[]; };   // [rows, row_stride]
layout(std430, binding = 1) writeonly buffer Indices { int indices[]; };  // [rows, out_stride]

#define TOPK_WORKGROUP 512
const uint PER_INVOCATION = 8u;  // loads in flight per invocation

// Candidates a row may have: TOPK_ROW_MAX, or fewer where shared memory is
// smaller (engine/kernels/topk.cpp); a multiple of the workgroup.
layout(constant_id = 0) const uint ROW_CAPACITY = TOPK_ROW_MAX;
shared uint row_keys[ROW_CAPACITY + ROW_CAPACITY / 32u];

// Where candidate i's key sits in row_keys: one word of padding per 32, so
// that invocations walking contiguous segments of up to 32 candidates read
// different banks (unpadded, a segment of 32 put every invocation on one bank).
uint staged(uint i) { return i + i / 32u; }
#define TOPK_CANDIDATES
uint candidate_key(uint i) { return row_keys[staged(i)]; }
uint candidate_index(uint i) { return i; }

#include "topk_common.glsl"

void main() {
  const uint tid = gl_LocalInvocationIndex, row = gl_WorkGroupID.y;
  if (!write_padding_and_trivial_rows(row)) return;
  clear_histogram();
  // Loads past the row are clamped to its last candidate, so that none is
  // conditional; that key repeated is harmless to the extremes.
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
