#version 460
// KeyDiff step 1: per (KV head, split of KEYDIFF_SPLIT candidates), the sum of
// the unit-normalised keys (a zero key adds nothing). Invocations own 8
// channels of one key lane, so each key row is read by neighbouring invocations.
// Keys are read once: a round's keys stay in registers while their norms are
// summed from the invocations' partial squares, and the next round's loads are
// issued before that. (Norms from a pass of their own read K twice from DRAM at
// long lengths: 43% of read bandwidth at 128k.)
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Keys { uvec4 keys[]; };       // [G, T, d]
layout(std430, binding = 1) writeonly buffer Sums { float sums[]; };     // [G, n_splits, d]

layout(push_constant) uniform KeyDiffPush { KEYDIFF_FIELDS } pc;

DEFINE_LOAD8(load_key, keys)

#include "key_rounds.glsl"

shared float partial_squares[THREADS * UNROLL];  // [round key][chunk]
shared float inverse_norm[ROUND_KEYS];
shared float lane_sums[THREADS * 8u];

void main() {
  const uint split = gl_WorkGroupID.x, g = gl_WorkGroupID.y, tid = gl_LocalInvocationIndex;
  const uint first = split * KEYDIFF_SPLIT, count = min(KEYDIFF_SPLIT, pc.n_candidates - first);
  const uint chunk = key_chunk(), lane = key_lane();
  const bool has_lane = has_key_lane();

  uvec4 raw_a[UNROLL], raw_b[UNROLL];
  load_round(g, first, count, 0u, raw_a, raw_b);

  vec4 sum_lo = vec4(0), sum_hi = vec4(0);
  for (uint round_first = 0u; round_first < count; round_first += ROUND_KEYS) {
    vec4 lo[UNROLL], hi[UNROLL];
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
      const uint key = lane + LANES * u;
      if (round_first + key < count) unpack8(raw_a[u], raw_b[u], lo[u], hi[u]);
      else lo[u] = hi[u] = vec4(0);
      if (has_lane) partial_squares[key * CHUNKS + chunk] = dot(lo[u], lo[u]) + dot(hi[u], hi[u]);
    }
    load_round(g, first, count, round_first + ROUND_KEYS, raw_a, raw_b);
    barrier();
    for (uint key = tid; key < ROUND_KEYS; key += THREADS) {
      float squares = 0.0;
      for (uint c = 0u; c < CHUNKS; ++c) squares += partial_squares[key * CHUNKS + c];
      inverse_norm[key] = squares > 0.0 ? inversesqrt(squares) : 0.0;
    }
    barrier();
    if (has_lane)
      [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
        sum_lo += lo[u] * inverse_norm[lane + LANES * u];
        sum_hi += hi[u] * inverse_norm[lane + LANES * u];
      }
  }
  for (uint c = 0u; c < 4u; ++c) {
    lane_sums[tid * 8u + c] = sum_lo[c];
    lane_sums[tid * 8u + 4u + c] = sum_hi[c];
  }
  barrier();
  for (uint c = tid; c < HEAD_DIM; c += THREADS) {
    float total = 0.0;
    for (uint l = 0u; l < LANES; ++l) total += lane_sums[(l * CHUNKS + c / 8u) * 8u + c % 8u];
    sums[(g * pc.n_splits + split) * HEAD_DIM + c] = total;
  }
}
