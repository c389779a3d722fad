#version 460
// Fier scores from the packed 1-bit keys: q . k_tilde_j with
// k_tilde_{j,c} = lo_c + bit_{j,c} (hi_c - lo_c) of token j's block. Reads bits
// and the block's fp16 (lo, hi), never dequantised keys. Per query head, or
// aggregated (max or mean) over the group's heads. An invocation scores a pair
// of neighbouring tokens of one block (a block's last token alone when g_s is
// odd) for every query head of the group; a workgroup, 128 pairs of one KV
// head. The pair shares each load of the block's (lo, hi) and each read of the
// queries from shared memory: on the H100, one token an invocation took 27.9 /
// 79.2 us at 32k / 128k, a pair 23.1 / 63.4; four were slower at 8k and 32k
// (docs/perf-experiments.md).
//
// The cache holds every block quantised over all T keys. A step's last block,
// when the candidates end inside it (pc.fresh_block), is quantised over the
// candidates only, as docs/methods.md cuts keys [0, t]: here, by the workgroups
// whose tokens it holds (fier_block.glsl), for their tokens' scores alone. The
// cache is never changed, so no step pays a dispatch to update or restore it.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "common.glsl"
#include "load.glsl"

layout(push_constant) uniform FierScoresPush { FIER_SCORES_FIELDS } pc;

#include "head_query.glsl"
layout(std430, binding = 1) readonly buffer LowHigh { uvec4 low_high[]; };    // [G, n_blocks, d] (lo, hi) fp16 pairs
layout(std430, binding = 2) readonly buffer Bits { uint bits[]; };            // [G, T, d / 32]
layout(std430, binding = 3) writeonly buffer Scores { float scores[]; };      // [rows, row_stride]
layout(std430, binding = 4) readonly buffer Keys { uvec4 keys[]; };           // [G, T, d]: the fresh block's

DEFINE_LOAD8(load_key, keys)
#include "fier_block.glsl"

// The query heads of a KV head read the same bits and (lo, hi): each
// invocation scores its token for HEADS_AT_ONCE of them per read, their
// queries' channel in one vec4 (one shared-memory read for four heads).
const uint HEADS_AT_ONCE = 4u;
const uint WORDS = HEAD_DIM / 32u;
shared vec4 group_query[HEAD_DIM];  // channel c of heads first .. first + 3

// The scores of token `token` and, with `pair`, of token + 1 of the same block.
void cached_scores(uint kv_head, uint token, bool pair, out vec4 score, out vec4 score_next) {
  const uint block = token / pc.group_size, row = kv_head * pc.n_tokens + token;
  score = vec4(0.0);
  score_next = vec4(0.0);
  for (uint word = 0u; word < WORDS; ++word) {
    const uint packed = bits[row * WORDS + word];
    const uint packed_next = bits[(pair ? row + 1u : row) * WORDS + word];
    [[unroll]] for (uint b = 0u; b < 32u; b += 4u) {
      const uint channel = word * 32u + b;
      const uvec4 bounds = low_high[((kv_head * pc.n_blocks + block) * HEAD_DIM + channel) / 4u];  // 4 channels a load
      [[unroll]] for (uint e = 0u; e < 4u; ++e) {
        const vec2 lo_hi = unpackHalf2x16(bounds[e]);
        const vec4 query = group_query[channel + e];
        const uint bit = 1u << (b + e);
        score += query * ((packed & bit) != 0u ? lo_hi.y : lo_hi.x);
        score_next += query * ((packed_next & bit) != 0u ? lo_hi.y : lo_hi.x);
      }
    }
  }
}

// A token of the fresh block, from the bounds in shared memory and its key.
vec4 fresh_scores(uint row) {
  vec4 score = vec4(0.0);
  [[dont_unroll]] for (uint word = 0u; word < WORDS; ++word) {
    const uint packed = quantize_key_word(row, word);
    [[dont_unroll]] for (uint b = 0u; b < 32u; ++b) {
      const vec2 lo_hi = unpackHalf2x16(block_pairs[word * 32u + b]);
      score += group_query[word * 32u + b] * ((packed & (1u << b)) != 0u ? lo_hi.y : lo_hi.x);
    }
  }
  return score;
}

void main() {
  const uint kv_head = gl_WorkGroupID.y, group = pc.n_heads / pc.n_kv_heads;
  const uint pairs_per_block = (pc.group_size + 1u) / 2u;
  // Workgroups in reverse: the one that also quantises the fresh block starts first.
  const uint pair_first = (gl_NumWorkGroups.x - 1u - gl_WorkGroupID.x) * 128u;
  const uint pair_index = pair_first + gl_LocalInvocationIndex, block = pair_index / pairs_per_block;
  const uint token = block * pc.group_size + 2u * (pair_index % pairs_per_block);
  const uint block_end = min((block + 1u) * pc.group_size, pc.n_candidates);
  const bool valid = token < block_end, pair = token + 1u < block_end;
  const uint head_row = kv_head * pc.n_tokens;

  bool fresh = false;
  if (pc.fresh_block != FIER_NO_FRESH_BLOCK) {
    const uint first_block = pair_first / pairs_per_block, last_block = (pair_first + 127u) / pairs_per_block;
    if (pc.fresh_block >= first_block && pc.fresh_block <= last_block) {  // uniform in the workgroup
      quantize_block_bounds(head_row + pc.fresh_block * pc.group_size, head_row + pc.n_candidates);
      fresh = block == pc.fresh_block && valid;
    }
  }

  const float empty = pc.aggregate == AGGREGATE_MEAN ? 0.0 : LOWEST_FLOAT;
  float aggregate = empty, aggregate_next = empty;  // over the heads of the current row
  for (uint first = 0u; first < group; first += HEADS_AT_ONCE) {
    barrier();
    for (uint c = gl_LocalInvocationIndex; c < HEAD_DIM; c += 128u) {
      group_query[c] = four_head_queries(kv_head * group + first, (kv_head + 1u) * group, c);
    }
    barrier();
    vec4 score = vec4(0.0), score_next = vec4(0.0);
    if (fresh) {
      // A loop, not two calls: each inlined copy of fresh_scores is code that
      // every SM fetches (two copies cost 1.5 us at 8k on the H100).
      [[dont_unroll]] for (uint t = 0u; t < (pair ? 2u : 1u); ++t) {
        const vec4 fresh_score = fresh_scores(head_row + token + t);
        if (t == 0u) score = fresh_score; else score_next = fresh_score;
      }
    } else if (valid) {
      cached_scores(kv_head, token, pair, score, score_next);
    }
    [[unroll]] for (uint j = 0u; j < HEADS_AT_ONCE; ++j) {
      uint h = first + j;
      if (h >= group) break;
      if (pc.aggregate == AGGREGATE_MEAN) {
        aggregate += score[j] / float(pc.heads_per_row);
        aggregate_next += score_next[j] / float(pc.heads_per_row);
      } else {
        aggregate = max(aggregate, score[j]);
        aggregate_next = max(aggregate_next, score_next[j]);
      }
      if ((h + 1u) % pc.heads_per_row == 0u) {
        const uint at = ((kv_head * group + h) / pc.heads_per_row) * pc.row_stride + token;
        if (valid) scores[at] = aggregate;
        if (pair) scores[at + 1u] = aggregate_next;
        aggregate = empty;
        aggregate_next = empty;
      }
    }
  }
}
