#version 460
// SnapKV / H2O / SampleAttention step 1: per window row and split of its causal
// keys, the max and the sum of exp2 of the row's scaled logits (log2 units),
// which window_lse.comp merges over the splits. A workgroup takes a tile of 64
// window rows of KV head z and split y of the keys, tile by tile
// (window_tile.glsl). The host counts its loops per key tile
// (window_tile_iterations in engine/methods/window_methods.cpp) and sizes the
// splits under a device's loop limit.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"
#include "common.glsl"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };      // [H, window_count, d], the window's rows
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };            // [G, T, d]
layout(std430, binding = 2) writeonly buffer RowStats { vec2 row_stats[]; };  // [H, window_count, n_splits]: (max, sum)

layout(push_constant) uniform WindowPush { WINDOW_FIELDS } pc;

#include "window_tile.glsl"

shared vec2 key_group_stats[TILE * 8u];  // [row][key group]

void main() {
  const uint t = gl_LocalInvocationIndex, row0 = gl_WorkGroupID.x * TILE, split = gl_WorkGroupID.y, g = gl_WorkGroupID.z;
  const uint row_end = min(row0 + TILE, rows_per_group());
  const uint key_begin = split * pc.split_keys;
  const uint key_end = min(key_begin + pc.split_keys, last_position(row0, row_end) + 1u);
  float row_max[4], row_sum[4];
  [[unroll]] for (uint a = 0u; a < 4u; ++a) {
    row_max[a] = LOWEST_FLOAT;
    row_sum[a] = 0.0;
  }
  for (uint key0 = key_begin; key0 < key_end; key0 += TILE) {
    vec4 s[8];
    tile_logits(g, row0, row_end, key0, key_end, s);
    [[unroll]] for (uint a = 0u; a < 4u; ++a) {
      const uint position = row_position(logit_row(row0, a));
      float m = row_max[a];
      [[unroll]] for (uint c = 0u; c < 8u; ++c) {
        const uint key = logit_key(key0, c < 4u ? a : 4u + a, c % 4u);
        if (key < key_end && key <= position) m = max(m, c < 4u ? s[a][c] : s[4u + a][c - 4u]);
      }
      float sum = row_sum[a] * exp2(row_max[a] - m);
      [[unroll]] for (uint c = 0u; c < 8u; ++c) {
        const uint key = logit_key(key0, c < 4u ? a : 4u + a, c % 4u);
        if (key < key_end && key <= position) sum += exp2((c < 4u ? s[a][c] : s[4u + a][c - 4u]) - m);
      }
      row_max[a] = m;
      row_sum[a] = sum;
    }
  }
  [[unroll]] for (uint a = 0u; a < 4u; ++a)
    key_group_stats[(4u * (t / 8u) + a) * 8u + t % 8u] = vec2(row_max[a], row_sum[a]);
  barrier();
  if (t < TILE && row0 + t < row_end) {
    float m = LOWEST_FLOAT, sum = 0.0;
    [[unroll]] for (uint k = 0u; k < 8u; ++k) m = max(m, key_group_stats[t * 8u + k].x);
    [[unroll]] for (uint k = 0u; k < 8u; ++k) {
      const vec2 stats = key_group_stats[t * 8u + k];
      sum += stats.y * exp2(stats.x - m);
    }
    row_stats[(g * rows_per_group() + row0 + t) * pc.n_splits + split] = vec2(m, sum);
  }
}
