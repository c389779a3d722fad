#version 460
// Fier metadata: for each KV head and block of group_size tokens, the channel
// min lo and max hi (stored as one fp16 pair) and, per token and channel, one
// bit: 1 when hi > lo and (k - lo) / (hi - lo) >= 0.5. Built once per cache; an
// append recomputes only the blocks it touched (first_block..end_block).
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Keys { uvec4 keys[]; };            // [G, T, d]
layout(std430, binding = 1) writeonly buffer LowHigh { uint low_high[]; };     // [G, n_blocks, d]: packHalf2x16(lo, hi)
layout(std430, binding = 2) writeonly buffer Bits { uint bits[]; };            // [G, T, d / 32]

layout(push_constant) uniform FierQuantizePush { FIER_QUANTIZE_FIELDS } pc;

DEFINE_LOAD8(load_key, keys)

const uint CHUNKS = HEAD_DIM / 8u;
// Invocations per 16-byte piece of a row: each scans every TOKEN_LANES-th token
// of the block, so a decode step's one block costs a few load latencies, not
// group_size of them.
const uint TOKEN_LANES = 128u / CHUNKS;

shared vec4 lane_min[128][2], lane_max[128][2];
shared float low[HEAD_DIM];
shared float high[HEAD_DIM];

void main() {
  const uint block = pc.first_block + gl_WorkGroupID.x, kv_head = gl_WorkGroupID.y, tid = gl_LocalInvocationIndex;
  if (block >= pc.end_block) return;
  const uint first = block * pc.group_size, end = min(first + pc.group_size, pc.n_valid);
  const uint chunk = tid % CHUNKS, token_lane = tid / CHUNKS;
  vec4 max_lo = vec4(-3.402823466e38), max_hi = max_lo, min_lo = vec4(3.402823466e38), min_hi = min_lo;
  if (token_lane < TOKEN_LANES)
    for (uint j = first + token_lane; j < end; j += TOKEN_LANES) {
      vec4 lo, hi;
      load_key((kv_head * pc.n_tokens + j) * HEAD_DIM + chunk * 8u, lo, hi);
      max_lo = max(max_lo, lo);
      max_hi = max(max_hi, hi);
      min_lo = min(min_lo, lo);
      min_hi = min(min_hi, hi);
    }
  lane_min[tid][0] = min_lo;
  lane_min[tid][1] = min_hi;
  lane_max[tid][0] = max_lo;
  lane_max[tid][1] = max_hi;
  barrier();
  for (uint c = tid; c < HEAD_DIM; c += 128u) {
    float lowest = 3.402823466e38, highest = -3.402823466e38;
    for (uint lane = 0u; lane < TOKEN_LANES; ++lane) {
      lowest = min(lowest, lane_min[lane * CHUNKS + c / 8u][(c % 8u) / 4u][c % 4u]);
      highest = max(highest, lane_max[lane * CHUNKS + c / 8u][(c % 8u) / 4u][c % 4u]);
    }
    low[c] = lowest;
    high[c] = highest;
    low_high[(kv_head * pc.n_blocks + block) * HEAD_DIM + c] = packHalf2x16(vec2(lowest, highest));
  }
  barrier();
  const uint words = HEAD_DIM / 32u;
  for (uint i = tid; i < (end - first) * words; i += 128u) {
    uint j = first + i / words, word = i % words, packed = 0u;
    for (uint part = 0u; part < 4u; ++part) {
      vec4 lo, hi;
      load_key((kv_head * pc.n_tokens + j) * HEAD_DIM + word * 32u + part * 8u, lo, hi);
      for (uint c = 0u; c < 8u; ++c) {
        uint channel = word * 32u + part * 8u + c;
        float value = c < 4u ? lo[c] : hi[c - 4u];
        float range = high[channel] - low[channel];
        // (k - lo) / range >= 0.5 without the division, which a fast divide may round
        // below 0.5 where k sits exactly halfway (common in fp16 keys)
        if (range > 0.0 && 2.0 * (value - low[channel]) >= range) packed |= 1u << (part * 8u + c);
      }
    }
    bits[(kv_head * pc.n_tokens + j) * words + word] = packed;
  }
}
