#version 460
// Fier metadata (fier_block.glsl): for each KV head and block of group_size
// tokens, the channels' (lo, hi) and every token's bits. Built once per cache;
// an append recomputes only the blocks it touched (first_block..end_block).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
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
#include "fier_block.glsl"

void main() {
  const uint block = pc.first_block + gl_WorkGroupID.x, kv_head = gl_WorkGroupID.y, tid = gl_LocalInvocationIndex;
  if (block >= pc.end_block) return;
  const uint first = block * pc.group_size, end = min(first + pc.group_size, pc.n_valid);
  const uint head_row = kv_head * pc.n_tokens, words = HEAD_DIM / 32u;
  quantize_block_bounds(head_row + first, head_row + end);
  for (uint c = tid; c < HEAD_DIM; c += 128u) low_high[(kv_head * pc.n_blocks + block) * HEAD_DIM + c] = block_pairs[c];
  for (uint i = tid; i < (end - first) * words; i += 128u) {
    const uint row = head_row + first + i / words;
    bits[row * words + i % words] = quantize_key_word(row, i % words);
  }
}
