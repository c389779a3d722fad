#version 460
// Fier scores from the packed 1-bit keys: q . k_tilde_j with
// k_tilde_{j,c} = lo_c + bit_{j,c} (hi_c - lo_c) of token j's block. Reads bits
// and the block's fp16 (lo, hi), never dequantised keys. Per query head, or
// aggregated (max or mean) over the group's heads.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(local_size_x = 128) in;

#include "common.glsl"

layout(std430, binding = 0) readonly buffer MeanQuery { float query[]; };     // [H, d]
layout(std430, binding = 1) readonly buffer LowHigh { uint low_high[]; };     // [G, n_blocks, d]
layout(std430, binding = 2) readonly buffer Bits { uint bits[]; };            // [G, T, d / 32]
layout(std430, binding = 3) writeonly buffer Scores { float scores[]; };      // [rows, row_stride]

layout(push_constant) uniform FierScoresPush { FIER_SCORES_FIELDS } pc;

shared float head_query[HEAD_DIM];

void main() {
  const uint row = gl_WorkGroupID.y, token = gl_GlobalInvocationID.x;
  const uint first_head = row * pc.heads_per_row;
  const uint kv_head = first_head / (pc.n_heads / pc.n_kv_heads);
  const uint block = token / pc.group_size, words = HEAD_DIM / 32u;
  float aggregate = pc.aggregate == AGGREGATE_MEAN ? 0.0 : LOWEST_FLOAT;
  for (uint h = first_head; h < first_head + pc.heads_per_row; ++h) {
    barrier();
    for (uint c = gl_LocalInvocationIndex; c < HEAD_DIM; c += 128u) head_query[c] = query[h * HEAD_DIM + c];
    barrier();
    if (token >= pc.n_candidates) continue;
    float score = 0.0;
    for (uint word = 0u; word < words; ++word) {
      uint packed = bits[(kv_head * pc.n_tokens + token) * words + word];
      for (uint b = 0u; b < 32u; ++b) {
        uint channel = word * 32u + b;
        vec2 lo_hi = unpackHalf2x16(low_high[(kv_head * pc.n_blocks + block) * HEAD_DIM + channel]);
        score += head_query[channel] * ((packed & (1u << b)) != 0u ? lo_hi.y : lo_hi.x);
      }
    }
    aggregate = pc.aggregate == AGGREGATE_MEAN ? aggregate + score / float(pc.heads_per_row) : max(aggregate, score);
  }
  if (token < pc.n_candidates) scores[row * pc.row_stride + token] = aggregate;
}
