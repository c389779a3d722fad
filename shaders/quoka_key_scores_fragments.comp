#version 460
// QuoKA step 4 on tensor cores, the keys loaded straight into the matrix
// operands: s_j = max_i a_i . k_j / |k_j| for at most 16 aggregates, as
// quoka_key_scores_matrix.comp, without staging keys in shared memory and
// without a workgroup barrier after the prologue. Each subgroup walks its
// fragments of 16 keys on its own, with the next fragment's loads in flight
// (two in flight took 156 registers against 96 and were slower). On the H100
// at 128k: 111 us, 77% of the read bandwidth, against the staging kernel's
// 169 (docs/perf-experiments.md).
//
// The products are S^T = K A^T: K, 16 keys x 16 channels, is the A operand,
// built element by element from each lane's registers. That needs to know
// which element of a fragment a lane holds, which cooperative matrices leave
// to the implementation: the engine runs this kernel only where
// cooperative_matrix_layout.comp found NVIDIA's layout (lane l, g = l / 4,
// t = l % 4, holds row g at columns 2t, 2t + 1, 2t + 8, 2t + 9, then row g + 8
// at the same columns; the fp32 accumulator alike), and
// quoka_key_scores_matrix.comp elsewhere.
//
// A dot product does not depend on the order of its channels, so the channels
// of each 16-channel block are a permutation chosen for the loads: lane t of a
// key loads the key's 16-byte pieces t, t + 4, t + 8, ... (the key's four
// lanes read 64 contiguous bytes a load), and its words fill its columns in
// order. The aggregates, the B operand, are stored in shared memory with the
// same permutation. The aggregates are fp32, each entering the fp16 products
// as hi + lo, as in quoka_key_scores_matrix.comp.
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;  // a multiple of 32
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;  // fp16 keys only
layout(local_size_x = 128) in;  // 4 subgroups of 32

#include "common.glsl"

layout(std430, binding = 0) readonly buffer Aggregates { float aggregates[]; };  // [G, n_aggregates, d]
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };              // [G, T, d] fp16
layout(std430, binding = 2) writeonly buffer Scores { float scores[]; };         // [G, row_stride]

layout(push_constant) uniform QuokaPush { QUOKA_FIELDS } pc;

const uint KEYS = 64, FRAGMENT = 16;    // keys per tile (a fragment per subgroup); fragment size
const uint CHUNKS = HEAD_DIM / 8u;      // 16-byte pieces of a row
const uint LANE_PIECES = CHUNKS / 4u;   // a lane's pieces of each of its two keys
const uint ROW_PIECES = CHUNKS + 1u;    // padded aggregate rows: no bank conflicts between rows
const uint D_BLOCKS = HEAD_DIM / FRAGMENT;

#define HALF_FRAGMENT fcoopmatNV<16, gl_ScopeSubgroup, FRAGMENT, FRAGMENT>
#define FLOAT_FRAGMENT fcoopmatNV<32, gl_ScopeSubgroup, FRAGMENT, FRAGMENT>

shared uvec4 aggregate_hi[FRAGMENT * ROW_PIECES];  // rows of permuted channels, fp16
shared uvec4 aggregate_lo[FRAGMENT * ROW_PIECES];

// Physical channel of column `u` (0..7) of logical piece `piece`: the word
// `piece` of the lane t = u / 2 that holds it is word piece % 4 of that
// lane's piece piece / 4, which is the key's piece 4 (piece / 4) + t.
uint physical_channel(uint piece, uint u) { return 8u * (4u * (piece / 4u) + u / 2u) + 2u * (piece % 4u) + u % 2u; }

// This lane's pieces of key `key`. A key past the candidates loads the last
// candidate instead, whose scores are not stored: loads behind a condition
// took 0.4-1.2 us longer on the H100 (docs/perf-experiments.md).
void fetch_key(uint kv_head, uint key, uint t, out uvec4 pieces[LANE_PIECES]) {
  [[unroll]] for (uint m = 0u; m < LANE_PIECES; ++m)
    pieces[m] = keys[(kv_head * pc.n_tokens + min(key, max(pc.n_candidates, 1u) - 1u)) * CHUNKS + 4u * m + t];
}

float squares(uvec4 pieces[LANE_PIECES]) {
  float sum = 0.0;
  [[unroll]] for (uint m = 0u; m < LANE_PIECES; ++m)
    [[unroll]] for (uint x = 0u; x < 4u; ++x) {
      const vec2 pair = unpackHalf2x16(pieces[m][x]);
      sum += dot(pair, pair);
    }
  return sum;
}

void main() {
  const uint kv_head = gl_WorkGroupID.y, tid = gl_LocalInvocationIndex;
  const uint subgroup = gl_SubgroupID, lane = gl_SubgroupInvocationID, g = lane / 4u, t = lane % 4u;
  const uint n_aggregates = pc.aggregate_max != 0u ? (pc.n_heads / pc.n_kv_heads) * pc.n_keep : pc.n_keep;
  const uint n_tiles = (pc.n_candidates + KEYS - 1u) / KEYS;
  // The workgroups of a KV head deal out its tiles (workgroup w takes tiles w,
  // w + workgroups, ...), so that they read one stretch of keys together;
  // contiguous runs of tiles were 1-1.5 us slower on the H100
  // (docs/perf-experiments.md).
  const uint tile_step = gl_NumWorkGroups.x;

  uvec4 next0[LANE_PIECES], next1[LANE_PIECES];  // keys g and g + 8 of the next fragment
  const uint first_key = gl_WorkGroupID.x * KEYS + subgroup * FRAGMENT;
  fetch_key(kv_head, first_key + g, t, next0);
  fetch_key(kv_head, first_key + g + 8u, t, next1);

  for (uint i = tid; i < FRAGMENT * CHUNKS; i += 128u) {
    const uint a = i / CHUNKS, piece = i % CHUNKS, row = (kv_head * n_aggregates + a) * HEAD_DIM;
    vec4 x0 = vec4(0), x1 = vec4(0);
    if (a < n_aggregates) {
      [[unroll]] for (uint u = 0u; u < 4u; ++u) {
        x0[u] = aggregates[row + physical_channel(piece, u)];
        x1[u] = aggregates[row + physical_channel(piece, u + 4u)];
      }
    }
    const vec4 hi0 = fp16_high_part(x0), hi1 = fp16_high_part(x1);
    aggregate_hi[a * ROW_PIECES + piece] = pack8(hi0, hi1);
    aggregate_lo[a * ROW_PIECES + piece] = pack8(x0 - hi0, x1 - hi1);
  }
  barrier();

  for (uint tile = gl_WorkGroupID.x; tile < n_tiles; tile += tile_step) {
    uvec4 key0[LANE_PIECES], key1[LANE_PIECES];
    [[unroll]] for (uint m = 0u; m < LANE_PIECES; ++m) {
      key0[m] = next0[m];
      key1[m] = next1[m];
    }
    if (tile + tile_step < n_tiles) {
      const uint next_key = (tile + tile_step) * KEYS + subgroup * FRAGMENT;
      fetch_key(kv_head, next_key + g, t, next0);
      fetch_key(kv_head, next_key + g + 8u, t, next1);
    }

    // hi and lo products in two chains, as in quoka_key_scores_matrix.
    FLOAT_FRAGMENT s = FLOAT_FRAGMENT(0.0), s_lo = FLOAT_FRAGMENT(0.0);
    [[unroll]] for (uint b = 0u; b < D_BLOCKS; ++b) {
      // Word 2b of a key's words fills columns 2t, 2t + 1; word 2b + 1 columns 2t + 8, 2t + 9.
      const f16vec2 k00 = unpackFloat2x16(key0[b / 2u][(2u * b) % 4u]);
      const f16vec2 k01 = unpackFloat2x16(key0[b / 2u][(2u * b) % 4u + 1u]);
      const f16vec2 k10 = unpackFloat2x16(key1[b / 2u][(2u * b) % 4u]);
      const f16vec2 k11 = unpackFloat2x16(key1[b / 2u][(2u * b) % 4u + 1u]);
      HALF_FRAGMENT k;
      k[0] = k00.x; k[1] = k00.y; k[2] = k01.x; k[3] = k01.y;
      k[4] = k10.x; k[5] = k10.y; k[6] = k11.x; k[7] = k11.y;
      HALF_FRAGMENT a;
      coopMatLoadNV(a, aggregate_hi, b * 2u, ROW_PIECES, true);  // A^T: permuted channels x aggregates
      s = coopMatMulAddNV(k, a, s);
      coopMatLoadNV(a, aggregate_lo, b * 2u, ROW_PIECES, true);
      s_lo = coopMatMulAddNV(k, a, s_lo);
    }
    s = s + s_lo;

    // Elements 0-3 are key g's scores for aggregates 2t, 2t + 1, 2t + 8,
    // 2t + 9; elements 4-7 key g + 8's.
    float best0 = LOWEST_FLOAT, best1 = LOWEST_FLOAT;
    [[unroll]] for (uint e = 0u; e < 8u; ++e) {
      const uint aggregate = 2u * t + (e & 1u) + ((e & 2u) != 0u ? 8u : 0u);
      if (aggregate >= n_aggregates) continue;
      if (e < 4u) best0 = max(best0, s[e]); else best1 = max(best1, s[e]);
    }
    float norm0 = squares(key0), norm1 = squares(key1);
    [[unroll]] for (uint mask = 1u; mask < 4u; mask *= 2u) {
      best0 = max(best0, subgroupShuffleXor(best0, mask));
      best1 = max(best1, subgroupShuffleXor(best1, mask));
      norm0 += subgroupShuffleXor(norm0, mask);
      norm1 += subgroupShuffleXor(norm1, mask);
    }
    const uint key = tile * KEYS + subgroup * FRAGMENT + g + (t == 1u ? 8u : 0u);
    const float best = t == 1u ? best1 : best0, norm = t == 1u ? norm1 : norm0;
    const float key_scale = norm > 0.0 ? 1.0 / sqrt(norm) : 0.0;  // a zero key stays zero
    if (t < 2u && key < pc.n_candidates) scores[kv_head * pc.row_stride + key] = best * key_scale;
  }
}
