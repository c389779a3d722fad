#version 460
// Fier's scores in bit-plane form (an experiment beside fier_approx_scores,
// KVSCOPE_FIER_BITPLANES=1; docs/perf-experiments.md). With block b's lo and
// hi, q . k~_j = sum_c q_c lo_c + sum_{c: bit_{j,c} = 1} w_c, where
// w_c = q_c (hi_c - lo_c). For each block of the workgroup, head and word of
// 32 channels, w is quantised once a step to 8 bits, w_c ~ w_min + scale u_c
// (u_c in 0..255, a scale and a minimum a word), and kept as 8 bit-planes:
// the second sum is then popcount(bits) w_min + scale sum_i 2^i
// popcount(bits & plane_i), 9 AND-popcounts a word and no multiplication a
// channel. Each score is within sum_words popcount(bits) scale / 2 of
// fier_approx_scores' (the rounding of u), which tests/test_selection.cpp
// holds it to.
//
// The same work split as fier_approx_scores: a workgroup scores 128 pairs of
// a block's tokens of one KV head, four query heads at a time; the fresh
// block (the candidates end inside it) is quantised here over the candidates
// (fier_block.glsl), its planes built from those bounds.
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

const uint HEADS_AT_ONCE = 4u;
const uint WORDS = HEAD_DIM / 32u;
// The blocks a workgroup's 128 pairs reach, for blocks of 16 tokens or more
// (the C++ side keeps smaller blocks on fier_approx_scores).
const uint MAX_BLOCKS = 9u;
const uint PLANE_SETS = MAX_BLOCKS * HEADS_AT_ONCE * WORDS;  // a (block, head, word) each
shared vec4 group_query[HEAD_DIM];
shared uint planes[PLANE_SETS * 8u];
shared vec3 plane_terms[PLANE_SETS];  // sum q lo over the word, w_min, scale

// The planes of (block `block` of the workgroup's first `first_block`, head
// j of the four, word): from the cache's bounds, or the fresh block's.
void build_planes(uint kv_head, uint first_block, uint set) {
  const uint word = set % WORDS, j = (set / WORDS) % HEADS_AT_ONCE, block = first_block + set / (WORDS * HEADS_AT_ONCE);
  float w[32];
  float offset = 0.0, lowest = 3.402823466e38, highest = -3.402823466e38;
  [[unroll]] for (uint b = 0u; b < 32u; b += 4u) {
    const uint channel = word * 32u + b;
    const bool fresh = block == pc.fresh_block;
    const uvec4 bounds = fresh ? uvec4(block_pairs[channel], block_pairs[channel + 1u], block_pairs[channel + 2u],
                                       block_pairs[channel + 3u])
                               : low_high[((kv_head * pc.n_blocks + block) * HEAD_DIM + channel) / 4u];
    [[unroll]] for (uint e = 0u; e < 4u; ++e) {
      const vec2 lo_hi = unpackHalf2x16(bounds[e]);
      const float q = group_query[channel + e][j];
      offset += q * lo_hi.x;
      w[b + e] = q * (lo_hi.y - lo_hi.x);
      lowest = min(lowest, w[b + e]);
      highest = max(highest, w[b + e]);
    }
  }
  const float scale = (highest - lowest) / 255.0, inverse = scale > 0.0 ? 1.0 / scale : 0.0;
  uint plane[8] = uint[8](0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
  [[unroll]] for (uint c = 0u; c < 32u; ++c) {
    const uint u = min(uint((w[c] - lowest) * inverse + 0.5), 255u);
    [[unroll]] for (uint i = 0u; i < 8u; ++i) plane[i] |= ((u >> i) & 1u) << c;
  }
  [[unroll]] for (uint i = 0u; i < 8u; ++i) planes[set * 8u + i] = plane[i];
  plane_terms[set] = vec3(offset, lowest, scale);
}

// The four heads' scores of one token of workgroup block `block_index`, its
// bits word by word from `row` (or quantised now for the fresh block).
vec4 token_scores(uint block_index, uint row, bool fresh) {
  vec4 score = vec4(0.0);
  for (uint word = 0u; word < WORDS; ++word) {
    const uint packed = fresh ? quantize_key_word(row, word) : bits[row * WORDS + word];
    const float ones = float(bitCount(packed));
    [[unroll]] for (uint j = 0u; j < HEADS_AT_ONCE; ++j) {
      const uint set = (block_index * HEADS_AT_ONCE + j) * WORDS + word;
      uint weighted = 0u;
      [[unroll]] for (uint i = 0u; i < 8u; ++i) weighted += uint(bitCount(packed & planes[set * 8u + i])) << i;
      const vec3 terms = plane_terms[set];
      score[j] += terms.x + ones * terms.y + terms.z * float(weighted);
    }
  }
  return score;
}

void main() {
  const uint kv_head = gl_WorkGroupID.y, group = pc.n_heads / pc.n_kv_heads;
  const uint pairs_per_block = (pc.group_size + 1u) / 2u;
  const uint pair_first = (gl_NumWorkGroups.x - 1u - gl_WorkGroupID.x) * 128u;
  const uint pair_index = pair_first + gl_LocalInvocationIndex, block = pair_index / pairs_per_block;
  const uint token = block * pc.group_size + 2u * (pair_index % pairs_per_block);
  const uint block_end = min((block + 1u) * pc.group_size, pc.n_candidates);
  const bool valid = token < block_end, pair = token + 1u < block_end;
  const uint head_row = kv_head * pc.n_tokens;
  const uint first_block = pair_first / pairs_per_block;
  const uint candidate_blocks = (pc.n_candidates + pc.group_size - 1u) / pc.group_size;
  const uint blocks_here = min((pair_first + 127u) / pairs_per_block + 1u, candidate_blocks) - first_block;

  bool fresh = false;
  if (pc.fresh_block != FIER_NO_FRESH_BLOCK && pc.fresh_block >= first_block &&
      pc.fresh_block < first_block + blocks_here) {  // uniform in the workgroup
    quantize_block_bounds(head_row + pc.fresh_block * pc.group_size, head_row + pc.n_candidates);
    fresh = block == pc.fresh_block && valid;
  }

  const float empty = pc.aggregate == AGGREGATE_MEAN ? 0.0 : LOWEST_FLOAT;
  float aggregate = empty, aggregate_next = empty;
  for (uint first = 0u; first < group; first += HEADS_AT_ONCE) {
    barrier();
    for (uint c = gl_LocalInvocationIndex; c < HEAD_DIM; c += 128u) {
      group_query[c] = four_head_queries(kv_head * group + first, (kv_head + 1u) * group, c);
    }
    barrier();
    for (uint set = gl_LocalInvocationIndex; set < blocks_here * HEADS_AT_ONCE * WORDS; set += 128u)
      build_planes(kv_head, first_block, set);
    barrier();
    vec4 score = vec4(0.0), score_next = vec4(0.0);
    if (valid) {
      score = token_scores(block - first_block, head_row + token, fresh);
      if (pair) score_next = token_scores(block - first_block, head_row + token + 1u, fresh);
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
