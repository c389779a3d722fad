#version 460
// Fier scores from the packed 1-bit keys: q . k_tilde_j with
// k_tilde_{j,c} = lo_c + bit_{j,c} (hi_c - lo_c) of token j's block. Reads bits
// and the block's fp16 (lo, hi), never dequantised keys. Per query head, or
// aggregated (max or mean) over the group's heads. One workgroup = 128 tokens
// of one KV head, for every query head of its group.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "common.glsl"

layout(push_constant) uniform FierScoresPush { FIER_SCORES_FIELDS } pc;

#include "head_query.glsl"
layout(std430, binding = 1) readonly buffer LowHigh { uvec4 low_high[]; };    // [G, n_blocks, d] (lo, hi) fp16 pairs
layout(std430, binding = 2) readonly buffer Bits { uint bits[]; };            // [G, T, d / 32]
layout(std430, binding = 3) writeonly buffer Scores { float scores[]; };      // [rows, row_stride]

// The query heads of a KV head read the same bits and (lo, hi): each
// invocation scores its token for HEADS_AT_ONCE of them per read, their
// queries' channel in one vec4 (one shared-memory read for four heads).
const uint HEADS_AT_ONCE = 4u;
shared vec4 group_query[HEAD_DIM];  // channel c of heads first .. first + 3

void main() {
  const uint kv_head = gl_WorkGroupID.y, token = gl_GlobalInvocationID.x;
  const uint group = pc.n_heads / pc.n_kv_heads;
  const uint block = token / pc.group_size, words = HEAD_DIM / 32u;
  const bool valid = token < pc.n_candidates;
  const float empty = pc.aggregate == AGGREGATE_MEAN ? 0.0 : LOWEST_FLOAT;
  float aggregate = empty;  // over the heads of the current row
  for (uint first = 0u; first < group; first += HEADS_AT_ONCE) {
    barrier();
    for (uint c = gl_LocalInvocationIndex; c < HEAD_DIM; c += 128u) {
      vec4 q = vec4(0.0);
      for (uint j = 0u; j < HEADS_AT_ONCE && first + j < group; ++j) q[j] = head_query(kv_head * group + first + j, c);
      group_query[c] = q;
    }
    barrier();
    vec4 score = vec4(0.0);
    if (valid) {
      for (uint word = 0u; word < words; ++word) {
        uint packed = bits[(kv_head * pc.n_tokens + token) * words + word];
        [[unroll]] for (uint b = 0u; b < 32u; b += 4u) {
          const uint channel = word * 32u + b;
          const uvec4 bounds = low_high[((kv_head * pc.n_blocks + block) * HEAD_DIM + channel) / 4u];  // 4 channels a load
          [[unroll]] for (uint e = 0u; e < 4u; ++e) {
            const vec2 lo_hi = unpackHalf2x16(bounds[e]);
            const float k = (packed & (1u << (b + e))) != 0u ? lo_hi.y : lo_hi.x;
            score += group_query[channel + e] * k;
          }
        }
      }
    }
    [[unroll]] for (uint j = 0u; j < HEADS_AT_ONCE; ++j) {
      uint h = first + j;
      if (h >= group) break;
      aggregate = pc.aggregate == AGGREGATE_MEAN ? aggregate + score[j] / float(pc.heads_per_row) : max(aggregate, score[j]);
      if ((h + 1u) % pc.heads_per_row == 0u) {
        if (valid) scores[((kv_head * group + h) / pc.heads_per_row) * pc.row_stride + token] = aggregate;
        aggregate = empty;
      }
    }
  }
}
