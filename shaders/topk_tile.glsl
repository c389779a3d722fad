// A tile of a long row for topk_histogram, topk_gather and topk_finish: each
// invocation loads TOPK_VECTORS aligned vec4s (`scores` is declared as vec4s),
// all in flight together; vector e of this invocation is the row's aligned vec4
// `first + e * WORKGROUP + tid`. Vectors that straddle the row's ends count
// only their components inside it (engine buffers are whole vec4s long,
// vk::Buffer). Keys are made from the values where they are used: a tile of
// keys kept across a scan spilled registers.
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

// Level 0 of a long row bins keys from window.x in bins of 2^window.y keys
// (topk_histogram); the first and last bins are open-ended.
uint window_bin(uint key, uvec2 window) { return key < window.x ? 0u : min((key - window.x) >> window.y, TOPK_BINS - 1u); }

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
