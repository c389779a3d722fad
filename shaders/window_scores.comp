#version 460
// SnapKV / H2O / SampleAttention step 3: per KV head and candidate key j, the
// window's attention sum_{h in g} sum_{i in window, j <= position_i} p_{h,i,j},
// with the probabilities normalised by window_lse.comp. A workgroup takes 64
// keys of KV head y and every window row, tile by tile (window_tile.glsl),
// skipping row tiles that end before its keys. The host counts its loops per
// row tile (window_tile_iterations in engine/methods/window_methods.cpp) and
// refuses windows that would outrun a device's loop limit.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };  // [H, window_count, d], the window's rows
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };        // [G, T, d]
layout(std430, binding = 2) readonly buffer LogSumExp { float lse[]; };    // [H, window_count], log2 units
layout(std430, binding = 3) writeonly buffer Scores { float scores[]; };             // [G, row_stride]

layout(push_constant) uniform WindowPush { WINDOW_FIELDS } pc;

#include "window_tile.glsl"

shared vec4 row_group_totals[16u * TILE / 4u];  // [row group][key / 4]

void main() {
  const uint t = gl_LocalInvocationIndex, key0 = gl_WorkGroupID.x * TILE, g = gl_WorkGroupID.y;
  const uint key_end = min(key0 + TILE, pc.n_candidates);
  const uint rows = rows_per_group();
  vec4 total_low = vec4(0.0), total_high = vec4(0.0);  // keys 4 (t % 8) .. + 3 and 32 + 4 (t % 8) .. + 3
  for (uint row0 = 0u; row0 < rows; row0 += TILE) {
    const uint row_end = min(row0 + TILE, rows);
    if (last_position(row0, row_end) < key0) continue;  // no row of the tile sees these keys
    float row_lse[4];
    [[unroll]] for (uint a = 0u; a < 4u; ++a) {
      const uint row = logit_row(row0, a);
      row_lse[a] = row < row_end ? lse[g * rows + row] : 0.0;
    }
    vec4 s[8];
    tile_logits(g, row0, row_end, key0, key_end, s);
    [[unroll]] for (uint a = 0u; a < 4u; ++a) {
      const uint row = logit_row(row0, a), position = row_position(row);
      if (row >= row_end) continue;
      [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        if (logit_key(key0, a, c) <= position) total_low[c] += exp2(s[a][c] - row_lse[a]);
        if (logit_key(key0, 4u + a, c) <= position) total_high[c] += exp2(s[4u + a][c] - row_lse[a]);
      }
    }
  }
  row_group_totals[(t / 8u) * TILE / 4u + t % 8u] = total_low;
  row_group_totals[(t / 8u) * TILE / 4u + 8u + t % 8u] = total_high;
  barrier();
  if (t < TILE && key0 + t < key_end) {
    float total = 0.0;
    [[unroll]] for (uint group = 0u; group < 16u; ++group) total += row_group_totals[group * TILE / 4u + t / 4u][t % 4u];
    scores[g * pc.row_stride + key0 + t] = total;
  }
}
