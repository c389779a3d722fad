#version 460
// The end of a long row's top-k, one workgroup of 1024 invocations a row: the
// keys topk_gather gathered are copied to shared memory in index order (its
// slices placed themselves in whatever order they ran; the slice table says
// where each went), the exact T is found among them (select_staged) and the
// selection is written. Where they did not fit, or no slices ran (rows of
// more than TOPK_MAX_SLICES slices), this workgroup reads the row itself, a
// pass per radix level, until the keys that can still be selected fit; if they
// never do (heavy ties at T, or k near ENTRY_CAPACITY), it writes the
// selection in a last pass over the row. It leaves the row's select state
// zeroed for the next use.
//
// One workgroup reads at most ~30 GB/s on the H100, hence the slices for the
// passes that every long row needs.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(std430, binding = 0) readonly buffer Scores { vec4 scores[]; };    // [rows, row_stride] floats
layout(std430, binding = 1) writeonly buffer Indices { int indices[]; };  // [rows, out_stride]
layout(std430, binding = 2) buffer SelectState { uint select_state[]; };    // [rows, TOPK_STATE_WORDS]
layout(std430, binding = 3) readonly buffer Gathered { uvec2 gathered[]; };  // [rows, ENTRY_CAPACITY]
layout(std430, binding = 4) readonly buffer SliceTable { uvec2 slice_table[]; };  // [rows, slices]

#define TOPK_WORKGROUP 1024
#define TOPK_VECTORS 4u

// Keys (and indices) shared memory holds: what the device's shared memory
// leaves after the other arrays (engine/topk.cpp).
layout(constant_id = 0) const uint ENTRY_CAPACITY = 4096u;
shared uvec2 entries[ENTRY_CAPACITY];  // (key, index in the row)
#define TOPK_CANDIDATES
uint candidate_key(uint i) { return entries[i].x; }
uint candidate_index(uint i) { return entries[i].y; }

#include "topk_common.glsl"
#include "topk_tile.glsl"

shared uvec2 slice_places[TOPK_MAX_SLICES];  // (first slot in `gathered`, first in `entries`)

// Copies the `count` gathered keys to `entries` in index order.
void copy_gathered(uint row, uint row_start, uint count) {
  const uint tid = gl_LocalInvocationIndex;
  const uvec2 own = tid < pc.slices ? slice_table[row * pc.slices + tid] : uvec2(0u);
  uvec2 total;
  const uint first = exclusive_scan(uvec2(own.y, 0u), total).x;
  if (tid < pc.slices) slice_places[tid] = uvec2(own.x, first);
  barrier();
  for (uint i = tid; i < count; i += WORKGROUP) {
    const uvec2 entry = gathered[row * ENTRY_CAPACITY + i];
    const uvec2 place = slice_places[((row_start + entry.y) / 4u - row_start / 4u) / (TOPK_SLICE / 4u)];
    entries[place.y + i - place.x] = entry;
  }
  barrier();
}

// Gathers the keys at or above the prefix (those under `mask` at least
// `prefix`) into `entries`, in index order; returns how many.
uint gather_row(uint row_start, uvec2 vectors, Select select) {
  uint count = 0u;
  for (uint first = vectors.x; first <= vectors.y; first += TILE_VECTORS) {
    const Tile tile = load_tile(row_start, first, vectors.y);
    uint take = 0u;
    [[unroll]] for (uint e = 0u; e < VECTORS; ++e)
      [[unroll]] for (uint c = 0u; c < 4u; ++c)
        if (tile_has(tile, e, c) && (tile_key(tile, e, c) & select.mask) >= select.prefix) take |= 1u << (4u * e + c);
    uint positions[VECTORS];
    const uint tile_count = tile_positions(take, positions);
    [[unroll]] for (uint e = 0u; e < VECTORS; ++e) {
      uint slot = count + positions[e];
      [[unroll]] for (uint c = 0u; c < 4u; ++c)
        if ((take & (1u << (4u * e + c))) != 0u)
          entries[slot++] = uvec2(tile_key(tile, e, c), row_index(row_start, first, e, c));
    }
    count += tile_count;
  }
  barrier();
  return count;
}

// Reads the row a pass per radix level (digits of 11, 11 and 10 bits) until
// the keys that can still be selected fit in `entries`, then gathers them
// there and returns how many; 0 if they never fit, and then `select` holds T.
uint stream_levels(uint row_start, uvec2 vectors, inout Select select) {
  uint candidates = pc.n;  // keys at or above the prefix
  [[dont_unroll]] for (uint level = 0u; level < 3u; ++level) {
    if (candidates <= ENTRY_CAPACITY) return gather_row(row_start, vectors, select);
    const uint shift = level == 0u ? 21u : level == 1u ? 10u : 0u;
    for (uint first = vectors.x; first <= vectors.y; first += TILE_VECTORS) {
      const Tile tile = load_tile(row_start, first, vectors.y);
      [[unroll]] for (uint e = 0u; e < VECTORS; ++e)
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
          const uint key = tile_key(tile, e, c);
          if (tile_has(tile, e, c) && (key & select.mask) == select.prefix)
            atomicAdd(histogram[(key >> shift) & (TOPK_BINS - 1u)], 1u);
        }
    }
    barrier();
    const uint in_bin = fix_digit(select, shift, TOPK_BINS - 1u);
    candidates = pc.k - select.remaining + in_bin;
  }
  return candidates <= ENTRY_CAPACITY ? gather_row(row_start, vectors, select) : 0u;
}

// The selection written straight from the row, per tile and vector in index
// order.
void write_streamed(uint row, uint row_start, uvec2 vectors, uint threshold, uint remaining) {
  uvec2 earlier = uvec2(0u);  // keys above and equal to T before this vector
  for (uint first = vectors.x; first <= vectors.y; first += TILE_VECTORS) {
    const Tile tile = load_tile(row_start, first, vectors.y);
    [[unroll]] for (uint e = 0u; e < VECTORS; ++e) {
      uvec2 own = uvec2(0u);
      [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        const uint key = tile_key(tile, e, c);
        if (tile_has(tile, e, c)) own += uvec2(key > threshold ? 1u : 0u, key == threshold ? 1u : 0u);
      }
      uvec2 total;
      const uvec2 before = earlier + exclusive_scan(own, total);
      uint equal_rank = before.y, slot = before.x + min(before.y, remaining);
      [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        const uint key = tile_key(tile, e, c);
        bool take = tile_has(tile, e, c) && key > threshold;
        if (tile_has(tile, e, c) && key == threshold) take = equal_rank++ < remaining;
        if (take) write_selected(row, slot++, row_index(row_start, first, e, c));
      }
      earlier += total;
    }
  }
}

void main() {
  const uint tid = gl_LocalInvocationIndex, row = gl_WorkGroupID.y;
  if (!write_padding_and_trivial_rows(row)) return;
  clear_histogram();
  const uint row_start = row * pc.row_stride, state = row * TOPK_STATE_WORDS;
  const uvec2 vectors = row_vectors(row_start);

  uint count = 0u;  // keys staged in `entries`
  Select select = Select(0u, 0u, pc.k);
  if (pc.slices > 0u) {
    count = select_state[state + TOPK_STATE_GATHERED];
    if (count > 0u) {
      copy_gathered(row, row_start, count);
      select = Select(select_state[state + TOPK_STATE_PREFIX], select_state[state + TOPK_STATE_MASK],
                      select_state[state + TOPK_STATE_REMAINING]);
    }
    barrier();  // every invocation has read the state
    for (uint b = tid; b < TOPK_STATE_WORDS; b += WORKGROUP) select_state[state + b] = 0u;
  }
  if (count == 0u) count = stream_levels(row_start, vectors, select);
  if (count > 0u) {
    select = select_staged(count, select);
    write_staged(row, count, select.prefix, select.remaining);
  } else {
    write_streamed(row, row_start, vectors, select.prefix, select.remaining);
  }
  write_kept_pages(row);
}
