#version 460
// SparQ step 2: per query head, approximate scores from the r query components
// of largest magnitude: s_j = sum_{c in R} q_c k_{j,c}, with the kept queries of
// sparq_kept_query. A workgroup walks tiles of 128 keys of one KV head for
// every query head of its group, four heads at a time, and reads its keys as
// KeyDiff does (key_rounds.glsl): an invocation owns 8 channels of a key, so a
// warp's loads are whole key rows, and a round's partial products for the four
// heads meet in shared memory while the next round's loads are in flight. An
// invocation reading its own key's 16-byte pieces in turn touched half of each
// 32-byte sector a load (docs/perf-experiments.md).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "load.glsl"

layout(push_constant) uniform SparqPush { SPARQ_FIELDS } pc;

layout(std430, binding = 0) readonly buffer KeptQuery { vec4 kept_query[]; };  // [G, head passes, d]
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };            // [G, T, d]
layout(std430, binding = 2) writeonly buffer Scores { float scores[]; };       // [H, row_stride]

DEFINE_LOAD8(load_key, keys)

#include "key_rounds.glsl"

const uint HEADS_AT_ONCE = 4u;
const uint TILE = 128u;
const uint ROUNDS_PER_TILE = (TILE + ROUND_KEYS - 1u) / ROUND_KEYS;
const uint PARTIAL_STRIDE = ROUND_KEYS + 1u;  // a chunk's row of keys, padded so a head's sums read distinct banks
shared float partial[HEADS_AT_ONCE * CHUNKS * PARTIAL_STRIDE];  // [head][chunk][round key]

// The run of keys that step `step` of this workgroup's walk reads: its tile's
// first key and key count, and the round's first key in the tile.
uvec3 walk_step(uint step) {
  const uint tile = gl_WorkGroupID.x + (step / ROUNDS_PER_TILE) * gl_NumWorkGroups.x;
  const uint first = tile * TILE;
  return uvec3(first, min(TILE, pc.n_candidates - first), (step % ROUNDS_PER_TILE) * ROUND_KEYS);
}

void main() {
  const uint kv_head = gl_WorkGroupID.y, group = pc.n_heads / pc.n_kv_heads, tid = gl_LocalInvocationIndex;
  const uint tiles = (pc.n_candidates + TILE - 1u) / TILE;
  // Tiles dealt out in turn among the KV head's workgroups (kTileWalkersPerKvHead says why).
  const uint my_tiles = (tiles - gl_WorkGroupID.x + gl_NumWorkGroups.x - 1u) / gl_NumWorkGroups.x;
  const uint steps = my_tiles * ROUNDS_PER_TILE;
  const uint chunk = key_chunk(), lane = key_lane();
  const bool has_lane = has_key_lane();
  const uint passes = (group + HEADS_AT_ONCE - 1u) / HEADS_AT_ONCE;
  for (uint pass = 0u; pass < passes; ++pass) {
    const uint first_head = pass * HEADS_AT_ONCE;
    uvec4 raw_a[UNROLL], raw_b[UNROLL];
    uvec3 run = walk_step(0u);
    if (steps > 0u) load_round(kv_head, run.x, run.y, run.z, raw_a, raw_b);
    vec4 kept[8];  // this invocation's chunk of the kept queries
    [[unroll]] for (uint c = 0u; c < 8u; ++c) kept[c] = kept_query[(kv_head * passes + pass) * HEAD_DIM + chunk * 8u + c];

    for (uint step = 0u; step < steps; ++step) {
      [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
        const uint key = lane + LANES * u;
        vec4 lo = vec4(0), hi = vec4(0);
        if (run.z + key < run.y) unpack8(raw_a[u], raw_b[u], lo, hi);
        vec4 product = vec4(0.0);
        [[unroll]] for (uint c = 0u; c < 4u; ++c) product += kept[c] * lo[c] + kept[4u + c] * hi[c];
        if (has_lane)
          [[unroll]] for (uint j = 0u; j < HEADS_AT_ONCE; ++j) partial[(j * CHUNKS + chunk) * PARTIAL_STRIDE + key] = product[j];
      }
      const uvec3 done = run;
      if (step + 1u < steps) {
        run = walk_step(step + 1u);
        load_round(kv_head, run.x, run.y, run.z, raw_a, raw_b);
      }
      barrier();
      for (uint i = tid; i < HEADS_AT_ONCE * ROUND_KEYS; i += THREADS) {
        const uint j = i / ROUND_KEYS, key = i % ROUND_KEYS;
        if (first_head + j >= group || done.z + key >= done.y) continue;
        float score = 0.0;
        for (uint c = 0u; c < CHUNKS; ++c) score += partial[(j * CHUNKS + c) * PARTIAL_STRIDE + key];
        scores[(kv_head * group + first_head + j) * pc.row_stride + done.x + done.z + key] = score;
      }
      barrier();
    }
  }
}
