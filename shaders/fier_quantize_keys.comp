#version 460
// Fier metadata: for each KV head and block of group_size tokens, the channel
// min lo and max hi (stored as one fp16 pair) and, per token and channel, one
// bit: 1 when hi > lo and (k - lo) / (hi - lo) >= 0.5. Built once per cache; an
// append recomputes only the blocks it touched (first_block..end_block).
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 64) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Keys { uvec4 keys[]; };            // [G, T, d]
layout(std430, binding = 1) writeonly buffer LowHigh { uint low_high[]; };     // [G, n_blocks, d]: packHalf2x16(lo, hi)
layout(std430, binding = 2) writeonly buffer Bits { uint bits[]; };            // [G, T, d / 32]

layout(push_constant) uniform FierQuantizePush { FIER_QUANTIZE_FIELDS } pc;

DEFINE_LOAD8(load_key, keys)

shared float low[HEAD_DIM];
shared float high[HEAD_DIM];

void main() {
  const uint block = pc.first_block + gl_WorkGroupID.x, kv_head = gl_WorkGroupID.y;
  if (block >= pc.end_block) return;
  const uint first = block * pc.group_size, end = min(first + pc.group_size, pc.n_valid);
  for (uint chunk = gl_LocalInvocationIndex; chunk < HEAD_DIM / 8u; chunk += 64u) {
    vec4 max_lo = vec4(-3.402823466e38), max_hi = max_lo, min_lo = vec4(3.402823466e38), min_hi = min_lo;
    for (uint j = first; j < end; ++j) {
      vec4 lo, hi;
      load_key((kv_head * pc.n_tokens + j) * HEAD_DIM + chunk * 8u, lo, hi);
      max_lo = max(max_lo, lo);
      max_hi = max(max_hi, hi);
      min_lo = min(min_lo, lo);
      min_hi = min(min_hi, hi);
    }
    for (uint c = 0u; c < 4u; ++c) {
      low[chunk * 8u + c] = min_lo[c];
      low[chunk * 8u + 4u + c] = min_hi[c];
      high[chunk * 8u + c] = max_lo[c];
      high[chunk * 8u + 4u + c] = max_hi[c];
    }
  }
  barrier();
  for (uint c = gl_LocalInvocationIndex; c < HEAD_DIM; c += 64u)
    low_high[(kv_head * pc.n_blocks + block) * HEAD_DIM + c] = packHalf2x16(vec2(low[c], high[c]));
  const uint words = HEAD_DIM / 32u;
  for (uint i = gl_LocalInvocationIndex; i < (end - first) * words; i += 64u) {
    uint j = first + i / words, word = i % words, packed = 0u;
    for (uint chunk = 0u; chunk < 4u; ++chunk) {
      vec4 lo, hi;
      load_key((kv_head * pc.n_tokens + j) * HEAD_DIM + word * 32u + chunk * 8u, lo, hi);
      for (uint c = 0u; c < 8u; ++c) {
        uint channel = word * 32u + chunk * 8u + c;
        float value = c < 4u ? lo[c] : hi[c - 4u];
        float range = high[channel] - low[channel];
        if (range > 0.0 && (value - low[channel]) / range >= 0.5) packed |= 1u << (chunk * 8u + c);
      }
    }
    bits[(kv_head * pc.n_tokens + j) * words + word] = packed;
  }
}
