#version 460
// KeyDiff step 3: s_j = -cos(k_j, anchor) per KV head (0 for a zero key or
// anchor), so the top-k keeps the keys least like the mean key. A workgroup
// scores KEYDIFF_SPLIT keys, read as keydiff_key_sums reads them: invocations
// own 8 channels of one key lane, and a round's partial dot products and
// squares meet in shared memory while the next round's loads are in flight.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Keys { uvec4 keys[]; };        // [G, T, d]
layout(std430, binding = 1) readonly buffer Anchor { float anchor[]; };   // [G, d]
layout(std430, binding = 2) writeonly buffer Scores { float scores[]; };  // [G, row_stride]

layout(push_constant) uniform KeyDiffPush { KEYDIFF_FIELDS } pc;

DEFINE_LOAD8(load_key, keys)

#include "key_rounds.glsl"

shared float anchor_tile[HEAD_DIM];
shared float anchor_norm;
shared float partial_dots[THREADS * UNROLL];     // [round key][chunk]
shared float partial_squares[THREADS * UNROLL];

void main() {
  const uint g = gl_WorkGroupID.y, tid = gl_LocalInvocationIndex;
  const uint first = gl_WorkGroupID.x * KEYDIFF_SPLIT, count = min(KEYDIFF_SPLIT, pc.n_candidates - first);
  const uint chunk = key_chunk(), lane = key_lane();
  const bool has_lane = has_key_lane();

  uvec4 raw_a[UNROLL], raw_b[UNROLL];
  load_round(g, first, count, 0u, raw_a, raw_b);

  for (uint c = tid; c < HEAD_DIM; c += THREADS) anchor_tile[c] = anchor[g * HEAD_DIM + c];
  barrier();
  if (tid == 0u) {
    float squares = 0.0;
    for (uint c = 0u; c < HEAD_DIM; ++c) squares += anchor_tile[c] * anchor_tile[c];
    anchor_norm = sqrt(squares);
  }
  const vec4 anchor_lo = vec4(anchor_tile[chunk * 8u], anchor_tile[chunk * 8u + 1u], anchor_tile[chunk * 8u + 2u], anchor_tile[chunk * 8u + 3u]);
  const vec4 anchor_hi = vec4(anchor_tile[chunk * 8u + 4u], anchor_tile[chunk * 8u + 5u], anchor_tile[chunk * 8u + 6u], anchor_tile[chunk * 8u + 7u]);

  for (uint round_first = 0u; round_first < count; round_first += ROUND_KEYS) {
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
      const uint key = lane + LANES * u;
      vec4 lo = vec4(0), hi = vec4(0);
      if (round_first + key < count) unpack8(raw_a[u], raw_b[u], lo, hi);
      if (has_lane) {
        partial_dots[key * CHUNKS + chunk] = dot(lo, anchor_lo) + dot(hi, anchor_hi);
        partial_squares[key * CHUNKS + chunk] = dot(lo, lo) + dot(hi, hi);
      }
    }
    load_round(g, first, count, round_first + ROUND_KEYS, raw_a, raw_b);
    barrier();
    for (uint key = tid; key < ROUND_KEYS && round_first + key < count; key += THREADS) {
      float dot_product = 0.0, squares = 0.0;
      for (uint c = 0u; c < CHUNKS; ++c) {
        dot_product += partial_dots[key * CHUNKS + c];
        squares += partial_squares[key * CHUNKS + c];
      }
      scores[g * pc.row_stride + first + round_first + key] =
          squares > 0.0 && anchor_norm > 0.0 ? -dot_product / (sqrt(squares) * anchor_norm) : 0.0;
    }
    barrier();
  }
}
