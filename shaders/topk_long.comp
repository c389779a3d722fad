#version 460
// The top-k of a row longer than topk_row takes, in one dispatch: one or more
// workgroups a row, each over one or more slices of TOPK_SLICE scores
// (workgroup_tiles); the last of a row's workgroups to finish selects.
//
// 1. Every workgroup of the row draws the same sample of it (TOPK_SAMPLE keys
//    spread over it, TOPK_SAMPLE_VECTOR) and finds a key L that from
//    pc.sample_rank to pc.sample_reach of the sample reach (sample_threshold).
//    The engine (plan_long_row) sets the rank a few standard deviations above
//    the sample's expected share of the k, so the row's keys at or above L
//    very likely number at least k and fit in shared memory.
// 2. It appends its slices' keys at or above L, with their indices, to the
//    row's gathered list, at a place taken with an atomic counter (the slice
//    table says where each slice went), then counts itself in.
// 3. The last to arrive copies the list in index order to shared memory, or
//    where it holds more than fits there (a k of several thousand: Fier's 3%
//    and 11% of 128k) to the row's ordered list in global memory, and selects
//    among it (select_staged): if at least k keys reach L, T does and every
//    key the selection takes is in the list. If fewer were gathered, or more
//    than the list holds (the sample missed), it reads the row itself a pass
//    per radix level, as does the one workgroup of a row the engine gives no
//    slices (a row too long for the slice table, or a k whose list would be
//    too long); if the keys never fit (heavy ties at T), it writes the
//    selection in a last pass over the row. It leaves the row's select state
//    zeroed for the next use.
//
// No workgroup waits for another: the last one does what is left. This
// replaced three dispatches (a level-0 histogram, a gather, a finish), each a
// dependent dispatch's ~3 us on the H100, and for rows of up to 32768 one
// workgroup reading the row a pass per level (docs/perf-experiments.md).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(std430, binding = 0) readonly buffer Scores { vec4 scores[]; };    // [rows, row_stride] floats
layout(std430, binding = 1) writeonly buffer Indices { int indices[]; };  // [rows, out_stride]
layout(std430, binding = 2) coherent buffer SelectState { uint select_state[]; };  // [rows, TOPK_STATE_WORDS]
layout(std430, binding = 3) coherent buffer Gathered { uvec2 gathered[]; };  // [rows, pc.list_capacity]: (key, index)
layout(std430, binding = 4) coherent buffer SliceTable { uvec2 slice_table[]; };  // [rows, slices]: (first, count)
layout(std430, binding = 5) coherent buffer Ordered { uvec2 ordered[]; };    // [rows, pc.list_capacity]: `gathered` in index order

// 512 invocations, two vec4s each a tile: a tile is a slice (TOPK_SLICE).
#define TOPK_WORKGROUP 512
#define TOPK_VECTORS 2u

// Keys (and indices) shared memory holds: what the device's shared memory
// leaves after the other arrays (engine/kernels/topk.cpp).
layout(constant_id = 0) const uint ENTRY_CAPACITY = 4096u;
shared uvec2 entries[ENTRY_CAPACITY];  // (key, index in the row)
// The candidates are `entries`, or from ordered_first on `ordered` (a list
// longer than shared memory holds: read from L2, still far less than the row).
bool staged_in_shared = true;
uint ordered_first = 0u;
#define TOPK_CANDIDATES
uint candidate_key(uint i) { return staged_in_shared ? entries[i].x : ordered[ordered_first + i].x; }
uint candidate_index(uint i) { return staged_in_shared ? entries[i].y : ordered[ordered_first + i].y; }

#include "topk_common.glsl"

// A tile of the row: each invocation loads TOPK_VECTORS aligned vec4s
// (`scores` is declared as vec4s), all in flight together; vector e of this
// invocation is the row's aligned vec4 `first + e * WORKGROUP + tid`. Vectors
// that straddle the row's ends count only their components inside it (engine
// buffers are whole vec4s long, vk::Buffer). Keys are made from the values
// where they are used: a tile of keys kept across a scan spilled registers.
const uint VECTORS = TOPK_VECTORS;  // at most 4: tile_positions packs their counts in two words
const uint TILE_VECTORS = VECTORS * WORKGROUP;

struct Tile {
  vec4 values[VECTORS];
  uint inside;  // bit 4e + c: component c of vector e lies in the row
};

// A row's aligned vec4s: the first, and the last that holds one of its scores.
uvec2 row_vectors(uint row_start) { return uvec2(row_start / 4u, (row_start + pc.n - 1u) / 4u); }

Tile load_tile(uint row_start, uint first, uint last) {
  Tile tile;
  [[unroll]] for (uint e = 0u; e < VECTORS; ++e)
    tile.values[e] = scores[min(first + e * WORKGROUP + gl_LocalInvocationIndex, last)];
  tile.inside = 0u;
  [[unroll]] for (uint e = 0u; e < VECTORS; ++e) {
    const uint vector = first + e * WORKGROUP + gl_LocalInvocationIndex;
    [[unroll]] for (uint c = 0u; c < 4u; ++c) {
      const uint at = 4u * vector + c;
      if (vector <= last && at >= row_start && at < row_start + pc.n) tile.inside |= 1u << (4u * e + c);
    }
  }
  return tile;
}

bool tile_has(Tile tile, uint e, uint c) { return (tile.inside & (1u << (4u * e + c))) != 0u; }
uint tile_key(Tile tile, uint e, uint c) { return orderable(tile.values[e][c]); }

// The tile's keys in the row whose bits under `mask` are at least `lowest`,
// as bits 4e + c.
uint tile_take(Tile tile, uint mask, uint lowest) {
  uint take = 0u;
  [[unroll]] for (uint e = 0u; e < VECTORS; ++e)
    [[unroll]] for (uint c = 0u; c < 4u; ++c)
      if (tile_has(tile, e, c) && (tile_key(tile, e, c) & mask) >= lowest) take |= 1u << (4u * e + c);
  return take;
}

uint row_index(uint row_start, uint first, uint e, uint c) {
  return 4u * (first + e * WORKGROUP + gl_LocalInvocationIndex) + c - row_start;
}

// Places the keys of a tile that `take` marks (bit 4e + c) in index order: the
// exclusive position of vector e's first taken key among the tile's, in every
// invocation, and the tile's total. One scan of each invocation's counts per
// vector, two 16-bit fields a word (a tile holds at most 64k keys).
uint tile_positions(uint take, out uint positions[VECTORS]) {
  uvec2 counts = uvec2(0u);
  [[unroll]] for (uint e = 0u; e < VECTORS; ++e) counts[e / 2u] |= bitCount((take >> (4u * e)) & 15u) << (16u * (e % 2u));
  uvec2 totals;
  const uvec2 before = exclusive_scan(counts, totals);
  uint vector_first = 0u;
  [[unroll]] for (uint e = 0u; e < VECTORS; ++e) {
    positions[e] = vector_first + ((before[e / 2u] >> (16u * (e % 2u))) & 0xffffu);
    vector_first += (totals[e / 2u] >> (16u * (e % 2u))) & 0xffffu;
  }
  return vector_first;
}

shared uvec2 slice_places[TOPK_MAX_SLICES];  // (first slot in `gathered`, first in `entries`)

#include "common.glsl"

// The row's sample, TOPK_SAMPLE / WORKGROUP keys an invocation, loaded as
// vec4s: single keys, each from its own 32-byte sector, made every workgroup
// of a row read the whole row again (Fier's 32 rows at 32k / 128k: top-k 2 /
// 3 us slower on the H100; docs/perf-experiments.md).
const uint SAMPLE_VECTORS = TOPK_SAMPLE_VECTORS / WORKGROUP, SAMPLE_KEYS = 4u * SAMPLE_VECTORS;
uint sample_keys[SAMPLE_KEYS];

// The vec4s between the row's first and last (those hold no other row's keys).
void load_sample(uvec2 vectors) {
  const uint inside = vectors.y - vectors.x - 1u;
  vec4 values[SAMPLE_VECTORS];
  [[unroll]] for (uint e = 0u; e < SAMPLE_VECTORS; ++e)
    values[e] = scores[vectors.x + 1u + TOPK_SAMPLE_VECTOR(e * WORKGROUP + gl_LocalInvocationIndex, inside)];
  [[unroll]] for (uint e = 0u; e < SAMPLE_VECTORS; ++e)
    [[unroll]] for (uint c = 0u; c < 4u; ++c) sample_keys[4u * e + c] = orderable(values[e][c]);
}

// The least key L of a radix bin that at least pc.sample_rank and at most
// pc.sample_reach sample keys reach, or the sample's pc.sample_rank-th
// largest key: select_within's levels over the sample (held in registers, not
// staged), ended as soon as the chosen bin's keys and those above it are few
// enough.
uint sample_threshold() {
  uvec2 extremes = uvec2(0u);
  [[unroll]] for (uint e = 0u; e < SAMPLE_KEYS; ++e) extremes = max(extremes, uvec2(sample_keys[e], ~sample_keys[e]));
  Select select = Select(0u, 0u, pc.sample_rank);
  int top = fix_shared_bits(select, workgroup_max(extremes));
  while (top >= 0) {
    const uvec2 digit = level_digit(top);
    [[unroll]] for (uint e = 0u; e < SAMPLE_KEYS; ++e)
      if ((sample_keys[e] & select.mask) == select.prefix) atomicAdd(histogram[(sample_keys[e] >> digit.x) & digit.y], 1u);
    barrier();
    const uint in_bin = fix_digit(select, digit.x, digit.y);
    const uint reaching = pc.sample_rank - select.remaining + in_bin;  // sample keys at or above the bin's least key
    top = reaching <= pc.sample_reach ? -1 : int(digit.x) - 1;
  }
  return select.prefix;
}

// Appends this workgroup's slices' keys at or above `threshold` to the row's
// gathered list (the first slice's tile already loaded); entries past the
// list's capacity are counted but not written. The next slice's tile is
// loaded while this one is gathered: one load in flight at a time left Fier's
// 32 rows of 128k, 8 slices a workgroup, paying a memory latency a slice.
shared uint place;
void gather_slices(uint row, uint row_start, uvec2 vectors, uvec2 slices, Tile tile, uint threshold) {
  Tile next;
  const uint state = row * TOPK_STATE_WORDS;
  for (uint slice = slices.x; slice < slices.y; ++slice) {
    const uint first = vectors.x + slice * TILE_VECTORS;
    if (slice != slices.x) tile = next;
    if (slice + 1u < slices.y) next = load_tile(row_start, first + TILE_VECTORS, vectors.y);
    const uint take = tile_take(tile, 0xffffffffu, threshold);
    uint positions[VECTORS];
    const uint count = tile_positions(take, positions);
    // The next slice's scan orders its write of `place` after every read of this one's.
    if (gl_LocalInvocationIndex == 0u) {
      place = atomicAdd(select_state[state], count) % TOPK_STATE_ARRIVAL;
      slice_table[row * pc.slices + slice] = uvec2(place, count);
    }
    barrier();
    [[unroll]] for (uint e = 0u; e < VECTORS; ++e) {
      uint slot = place + positions[e];
      [[unroll]] for (uint c = 0u; c < 4u; ++c)
        if ((take & (1u << (4u * e + c))) != 0u) {
          if (slot < pc.list_capacity) gathered[row * pc.list_capacity + slot] = uvec2(tile_key(tile, e, c), row_index(row_start, first, e, c));
          ++slot;
        }
    }
  }
}

// Counts this workgroup in; for the row's last, returns how many keys the
// row's workgroups gathered and zeroes the row's state, else ~0u.
shared uint gathered_by_row;
uint arrive(uint row) {
  const uint state = row * TOPK_STATE_WORDS;
  memoryBarrierBuffer();
  barrier();
  if (gl_LocalInvocationIndex == 0u) {
    gathered_by_row = ~0u;
    const uint before = atomicAdd(select_state[state], TOPK_STATE_ARRIVAL);
    if (before / TOPK_STATE_ARRIVAL == gl_NumWorkGroups.x - 1u) {
      gathered_by_row = before % TOPK_STATE_ARRIVAL;
      select_state[state] = 0u;
    }
  }
  barrier();
  memoryBarrierBuffer();
  return gathered_by_row;
}

// Copies the `count` gathered keys in index order to `entries`, or to the
// row's `ordered` list where they do not fit (staged_in_shared false). Each
// invocation issues COPY_BATCH loads before storing any, the first batch
// before the slice table's scan: a loop of one load at a time paid an L2
// latency per WORKGROUP entries.
const uint COPY_BATCH = 8u;
void load_entries(uint row, uint first, uint count, out uvec2 batch[COPY_BATCH]) {
  [[unroll]] for (uint e = 0u; e < COPY_BATCH; ++e)
    batch[e] = gathered[row * pc.list_capacity + min(first + e * WORKGROUP + gl_LocalInvocationIndex, count - 1u)];
}
void copy_gathered(uint row, uint row_start, uint count) {
  const uint tid = gl_LocalInvocationIndex;
  const uvec2 own = tid < pc.slices ? slice_table[row * pc.slices + tid] : uvec2(0u);
  uvec2 batch[COPY_BATCH];
  load_entries(row, 0u, count, batch);
  uvec2 total;
  const uint first = exclusive_scan(uvec2(own.y, 0u), total).x;
  if (tid < pc.slices) slice_places[tid] = uvec2(own.x, first);
  barrier();
  for (uint base = 0u;;) {
    [[unroll]] for (uint e = 0u; e < COPY_BATCH; ++e) {
      const uint i = base + e * WORKGROUP + tid;
      const uvec2 entry = batch[e];
      const uvec2 place = slice_places[((row_start + entry.y) / 4u - row_start / 4u) / (TOPK_SLICE / 4u)];
      if (i < count) {
        if (staged_in_shared) entries[place.y + i - place.x] = entry;
        else ordered[ordered_first + place.y + i - place.x] = entry;
      }
    }
    base += COPY_BATCH * WORKGROUP;
    if (base >= count) break;
    load_entries(row, base, count, batch);
  }
  memoryBarrierBuffer();
  barrier();
}

// Gathers the keys at or above the prefix (those under `mask` at least
// `prefix`) into `entries`, in index order; returns how many.
uint gather_row(uint row_start, uvec2 vectors, Select select) {
  uint count = 0u;
  for (uint first = vectors.x; first <= vectors.y; first += TILE_VECTORS) {
    const Tile tile = load_tile(row_start, first, vectors.y);
    const uint take = tile_take(tile, select.mask, select.prefix);
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
  const uint row = gl_WorkGroupID.y;
  if (!row_has_selection()) {
    if (gl_WorkGroupID.x == 0u) write_padding_and_trivial_rows(row);
    return;
  }
  const uint row_start = row * pc.row_stride;
  const uvec2 vectors = row_vectors(row_start);
  clear_histogram();

  uint count = 0u;  // keys staged in `entries`
  if (pc.slices > 0u) {
    const uvec2 slices = workgroup_tiles(pc.slices);  // slice s is tile s of the row
    const Tile tile = load_tile(row_start, vectors.x + slices.x * TILE_VECTORS, vectors.y);  // in flight meanwhile
    load_sample(vectors);
    gather_slices(row, row_start, vectors, slices, tile, sample_threshold());
    const uint gathered_count = arrive(row);
    if (gathered_count == ~0u) return;  // another workgroup of the row finishes it
    if (gathered_count >= pc.k && gathered_count <= pc.list_capacity) {
      staged_in_shared = gathered_count <= ENTRY_CAPACITY;
      ordered_first = row * pc.list_capacity;
      copy_gathered(row, row_start, gathered_count);
      count = gathered_count;
    }
  }
  write_padding_and_trivial_rows(row);
  Select select = Select(0u, 0u, pc.k);
  if (count == 0u) {
    staged_in_shared = true;
    count = stream_levels(row_start, vectors, select);
  }
  if (count > 0u) {
    select = select_staged(count, select);
    write_staged(row, count, select.prefix, select.remaining);
  } else {
    write_streamed(row, row_start, vectors, select.prefix, select.remaining);
  }
  write_kept_pages(row);
}
