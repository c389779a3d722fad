#version 460
// QuoKA step 4 on tensor cores (VK_NV_cooperative_matrix, 16x16x16, fp16 keys):
// the scores of quoka_key_scores.comp, s_j = max_i a_i . k_j / |k_j|, for at
// most 16 aggregates (QuoKA's default N_Q with mean aggregation), where
// quoka_key_scores_fragments.comp (1.5x faster on the H100 at 128k) cannot
// run: d not a multiple of 32, or fragments laid out otherwise. A workgroup
// converts the aggregates to fp16 in shared memory once and walks its share of
// the keys 64 at a time, issuing the next tile's loads before the current
// tile's work. The aggregate fragments are read from shared memory per tile:
// held in registers they took 150 registers against 103, a resident
// workgroup fewer per SM (72 against 60 µs at 32k, docs/perf.md). The
// aggregates are fp32; each enters the fp16 products as hi + lo (hi =
// fp16_high_part(a), lo = fp16(a - hi)), two products into one fp32 accumulator, so a
// score keeps about 22 bits of the aggregate instead of fp16's 11 (docs/methods.md:
// fp16 inputs, fp32 accumulation). The scalar kernel was bound by its FMAs
// (16 aggregates x 128 channels per key); here the latency between a tile's
// dependent products bounds it.
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;  // a multiple of 16
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;  // fp16 keys only
layout(local_size_x = 128) in;  // 4 subgroups of 32

#include "common.glsl"
#include "load.glsl"

layout(std430, binding = 0) readonly buffer Aggregates { float aggregates[]; };  // [G, n_aggregates, d]
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };              // [G, T, d] fp16
layout(std430, binding = 2) writeonly buffer Scores { float scores[]; };         // [G, row_stride]

layout(push_constant) uniform QuokaPush { QUOKA_FIELDS } pc;

const uint KEYS = 64, FRAGMENT = 16;  // keys per tile; aggregates, channels, keys per fragment
const uint CHUNKS = HEAD_DIM / 8u;    // 16-byte pieces of a row
const uint ROW_PIECES = CHUNKS + 1u;  // padded rows: no bank conflicts between rows
const uint D_BLOCKS = HEAD_DIM / FRAGMENT;
const uint KEY_PIECES = KEYS * CHUNKS / 128u;  // per invocation

#define HALF_FRAGMENT fcoopmatNV<16, gl_ScopeSubgroup, FRAGMENT, FRAGMENT>
#define FLOAT_FRAGMENT fcoopmatNV<32, gl_ScopeSubgroup, FRAGMENT, FRAGMENT>

shared uvec4 key_tile[KEYS * ROW_PIECES];
shared uvec4 aggregate_hi[FRAGMENT * ROW_PIECES];
shared uvec4 aggregate_lo[FRAGMENT * ROW_PIECES];
shared float score_tile[4u * FRAGMENT * FRAGMENT];  // per subgroup: 16 aggregates x its 16 keys

void fetch_tile(uint kv_head, uint key0, out uvec4 pieces[KEY_PIECES]) {
  [[unroll]] for (uint k = 0u; k < KEY_PIECES; ++k) {
    const uint i = gl_LocalInvocationIndex + 128u * k, key = key0 + i / CHUNKS;
    pieces[k] = key < pc.n_candidates ? keys[(kv_head * pc.n_tokens + key) * CHUNKS + i % CHUNKS] : uvec4(0);
  }
}

void main() {
  const uint kv_head = gl_WorkGroupID.y, tid = gl_LocalInvocationIndex;
  const uint subgroup = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint n_aggregates = pc.aggregate_max != 0u ? (pc.n_heads / pc.n_kv_heads) * pc.n_keep : pc.n_keep;
  const uint n_tiles = (pc.n_candidates + KEYS - 1u) / KEYS;
  const uint tiles_per_group = (n_tiles + gl_NumWorkGroups.x - 1u) / gl_NumWorkGroups.x;
  const uint tile_begin = gl_WorkGroupID.x * tiles_per_group, tile_end = min(tile_begin + tiles_per_group, n_tiles);

  uvec4 pieces[KEY_PIECES];
  if (tile_begin < tile_end) fetch_tile(kv_head, tile_begin * KEYS, pieces);

  for (uint i = tid; i < FRAGMENT * CHUNKS; i += 128u) {
    const uint a = i / CHUNKS, e = (kv_head * n_aggregates + a) * HEAD_DIM + (i % CHUNKS) * 8u;
    vec4 x0 = vec4(0), x1 = vec4(0);
    if (a < n_aggregates) {
      x0 = vec4(aggregates[e], aggregates[e + 1u], aggregates[e + 2u], aggregates[e + 3u]);
      x1 = vec4(aggregates[e + 4u], aggregates[e + 5u], aggregates[e + 6u], aggregates[e + 7u]);
    }
    const vec4 hi0 = fp16_high_part(x0), hi1 = fp16_high_part(x1);
    aggregate_hi[a * ROW_PIECES + i % CHUNKS] = pack8(hi0, hi1);
    aggregate_lo[a * ROW_PIECES + i % CHUNKS] = pack8(x0 - hi0, x1 - hi1);
  }
  barrier();

  // Lane l takes key (l & 15) of its subgroup's 16 and aggregate rows 8 (l >> 4) .. +7.
  const uint column = lane & 15u, first_row = (lane >> 4u) * 8u, last_row = min(first_row + 8u, n_aggregates);
  const uint region = subgroup * FRAGMENT * FRAGMENT;
  for (uint tile = tile_begin; tile < tile_end; ++tile) {
    [[unroll]] for (uint k = 0u; k < KEY_PIECES; ++k) {
      const uint i = tid + 128u * k;
      key_tile[(i / CHUNKS) * ROW_PIECES + i % CHUNKS] = pieces[k];
    }
    barrier();
    if (tile + 1u < tile_end) fetch_tile(kv_head, (tile + 1u) * KEYS, pieces);

    // Two lanes per key, half of its channels each: lanes 2c and 2c + 1 of the
    // subgroup hold the norm of its key c.
    float norm = 0.0;
    for (uint c = (tid & 1u) * CHUNKS / 2u; c < ((tid & 1u) + 1u) * CHUNKS / 2u; ++c) {
      vec4 a, b;
      unpack8(key_tile[(tid >> 1u) * ROW_PIECES + c], uvec4(0), a, b);
      norm += dot(a, a) + dot(b, b);
    }
    norm += subgroupShuffleXor(norm, 1u);

    // hi and lo products in two chains: the latency between dependent products
    // bounds a tile (one chain: 74 against 60 µs at 32k; four chains: 72
    // against 56, for their registers).
    FLOAT_FRAGMENT s = FLOAT_FRAGMENT(0.0), s_lo = FLOAT_FRAGMENT(0.0);
    [[unroll]] for (uint b = 0u; b < D_BLOCKS; ++b) {
      HALF_FRAGMENT k, a;
      coopMatLoadNV(k, key_tile, subgroup * FRAGMENT * ROW_PIECES + b * 2u, ROW_PIECES, true);  // K^T
      coopMatLoadNV(a, aggregate_hi, b * 2u, ROW_PIECES, false);
      s = coopMatMulAddNV(a, k, s);
      coopMatLoadNV(a, aggregate_lo, b * 2u, ROW_PIECES, false);
      s_lo = coopMatMulAddNV(a, k, s_lo);
    }
    s = s + s_lo;
    coopMatStoreNV(s, score_tile, region, FRAGMENT, false);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    float best = LOWEST_FLOAT;
    for (uint r = first_row; r < last_row; ++r) best = max(best, score_tile[region + r * FRAGMENT + column]);
    best = max(best, subgroupShuffleXor(best, 16u));
    const float key_norm = subgroupShuffle(norm, 2u * column);
    const float key_scale = key_norm > 0.0 ? 1.0 / sqrt(key_norm) : 0.0;  // a zero key stays zero
    const uint key = tile * KEYS + subgroup * FRAGMENT + column;
    if (lane < 16u && key < pc.n_candidates) scores[kv_head * pc.row_stride + key] = best * key_scale;
    barrier();  // every subgroup is done with key_tile and score_tile
  }
}
