#version 460
// The keys of a long row that can still be selected, one or more slices of
// TOPK_SLICE scores per workgroup (as topk_histogram's): from the row's
// level-0 histogram (topk_histogram), the bin that holds the k-th largest key;
// if the keys in it and above fit topk_finish's shared memory, each slice's
// such keys, with their indices, go to the row's gathered list in index order,
// at a place taken with an atomic counter, and the slice table records
// where; the select's progress goes to the row's state. Otherwise nothing:
// topk_finish then reads the row itself.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(std430, binding = 0) readonly buffer Scores { vec4 scores[]; };   // [rows, row_stride] floats
layout(std430, binding = 1) buffer SelectState { uint select_state[]; };   // [rows, TOPK_STATE_WORDS]
layout(std430, binding = 2) writeonly buffer Gathered { uvec2 gathered[]; };  // [rows, ENTRY_CAPACITY]: (key, index)
layout(std430, binding = 3) writeonly buffer SliceTable { uvec2 slice_table[]; };  // [rows, slices]: (first, count)

#define TOPK_WORKGROUP 256
#define TOPK_VECTORS 4u
#include "topk_common.glsl"
#include "topk_tile.glsl"
#include "common.glsl"

layout(constant_id = 0) const uint ENTRY_CAPACITY = 4096u;  // topk_finish's
shared uint place;

void main() {
  const uint tid = gl_LocalInvocationIndex, row = gl_WorkGroupID.y;
  if (!row_has_selection()) return;
  const uint row_start = row * pc.row_stride, state = row * TOPK_STATE_WORDS;
  const uvec2 vectors = row_vectors(row_start);
  const uvec2 slices = workgroup_tiles(pc.slices);  // slice s is tile s of the row
  Tile tile = load_tile(row_start, vectors.x + slices.x * TILE_VECTORS, vectors.y);  // in flight while the bin is chosen
  for (uint b = tid; b < TOPK_BINS; b += WORKGROUP) histogram[b] = select_state[state + TOPK_STATE_HISTOGRAM + b];
  barrier();
  const uvec3 chosen = choose_bin(pc.k, false);
  if (chosen.y + chosen.z > ENTRY_CAPACITY) return;
  const uvec2 window = uvec2(select_state[state + TOPK_STATE_BASE], select_state[state + TOPK_STATE_SHIFT]);
  const uint lowest = chosen.x == 0u ? 0u : window.x + (chosen.x << window.y);  // the chosen bin's first key
  // An inner bin's keys share their bits above window.y (the window starts on
  // a bin edge): a radix prefix. The first and last bins are open-ended.
  const bool inner = chosen.x > 0u && chosen.x < TOPK_BINS - 1u;
  if (slices.x == 0u && tid == 0u) {
    select_state[state + TOPK_STATE_PREFIX] = inner ? lowest : 0u;
    select_state[state + TOPK_STATE_MASK] = inner ? ~((1u << window.y) - 1u) : 0u;
    select_state[state + TOPK_STATE_REMAINING] = inner ? pc.k - chosen.y : pc.k;
  }

  // Each slice takes its own place (the next one's scan orders its write of
  // `place` after every read of this one's).
  for (uint slice = slices.x; slice < slices.y; ++slice) {
    const uint first = vectors.x + slice * TILE_VECTORS;
    if (slice != slices.x) tile = load_tile(row_start, first, vectors.y);
    uint take = 0u;
    [[unroll]] for (uint e = 0u; e < VECTORS; ++e)
      [[unroll]] for (uint c = 0u; c < 4u; ++c)
        if (first <= vectors.y && tile_has(tile, e, c) && tile_key(tile, e, c) >= lowest) take |= 1u << (4u * e + c);
    uint positions[VECTORS];
    const uint count = tile_positions(take, positions);
    if (tid == 0u) {
      place = atomicAdd(select_state[state + TOPK_STATE_GATHERED], count);
      slice_table[row * pc.slices + slice] = uvec2(place, count);
    }
    barrier();
    const uint at = row * ENTRY_CAPACITY + place;
    [[unroll]] for (uint e = 0u; e < VECTORS; ++e) {
      uint slot = at + positions[e];
      [[unroll]] for (uint c = 0u; c < 4u; ++c)
        if ((take & (1u << (4u * e + c))) != 0u) gathered[slot++] = uvec2(tile_key(tile, e, c), row_index(row_start, first, e, c));
    }
  }
}
