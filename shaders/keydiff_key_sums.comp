#version 460
// KeyDiff step 1: per (KV head, split of KEYDIFF_SPLIT candidates), the sum of
// the unit-normalised keys (a zero key adds nothing). Invocations own 8
// channels of one key lane, so each key row is read by neighbouring invocations.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;
const uint THREADS = 128u;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Keys { uvec4 keys[]; };       // [G, T, d]
layout(std430, binding = 1) writeonly buffer Sums { float sums[]; };     // [G, n_splits, d]

layout(push_constant) uniform KeyDiffPush { KEYDIFF_FIELDS } pc;

DEFINE_LOAD8(load_key, keys)

const uint CHUNKS = HEAD_DIM / 8u;
const uint LANES = THREADS / CHUNKS;  // keys read side by side

shared float inverse_norm[KEYDIFF_SPLIT];
shared float lane_sums[THREADS * 8u];

void main() {
  const uint split = gl_WorkGroupID.x, g = gl_WorkGroupID.y, tid = gl_LocalInvocationIndex;
  const uint first = split * KEYDIFF_SPLIT, count = min(KEYDIFF_SPLIT, pc.n_candidates - first);
  for (uint j = tid; j < count; j += THREADS) {
    float squares = 0.0;
    for (uint chunk = 0u; chunk < CHUNKS; ++chunk) {
      vec4 lo, hi;
      load_key((g * pc.n_tokens + first + j) * HEAD_DIM + chunk * 8u, lo, hi);
      squares += dot(lo, lo) + dot(hi, hi);
    }
    inverse_norm[j] = squares > 0.0 ? inversesqrt(squares) : 0.0;
  }
  barrier();
  const uint chunk = tid % CHUNKS, lane = tid / CHUNKS;
  vec4 sum_lo = vec4(0), sum_hi = vec4(0);
  if (lane < LANES)
    for (uint j = lane; j < count; j += LANES) {
      vec4 lo, hi;
      load_key((g * pc.n_tokens + first + j) * HEAD_DIM + chunk * 8u, lo, hi);
      sum_lo += lo * inverse_norm[j];
      sum_hi += hi * inverse_norm[j];
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
