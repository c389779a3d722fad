// The body shared by window_row_stats.comp and window_scores.comp (SnapKV, H2O,
// SampleAttention): the scaled logits S = Q K^T of a tile of TILE window rows
// by TILE keys of one KV head, in fp32 registers, each key read once per tile.
//
// A KV head's window rows are its query heads' window queries, row = head in
// group * window_count + i, at position window_first + i * window_stride; in
// the gathered queries [H, window_count, d] they are contiguous from
// g * rows_per_group. Channels go through shared memory STEP at a time, double
// buffered: invocations 0-63 stage a row's 8 channels (pre-scaled to log2
// units), 64-127 a key's. Invocation t holds the products of rows 4 (t / 8) ..
// + 3 with keys 4 (t % 8) .. + 3 and 32 + 4 (t % 8) .. + 3: per channel, three
// 16-byte shared reads (a subgroup's key reads are 8 consecutive ones) feed 32
// FMAs. Before this tiling, every (window row, key) pair re-read the key from
// memory: SnapKV decode at 32k took 7.2 ms on the H100 (docs/perf.md).
// The including kernel declares `queries` and `keys` (uvec4 arrays), the push
// constants `pc` (WINDOW_FIELDS) and includes load.glsl first.

const uint TILE = 64u;
const uint STEP = 8u;  // channels staged at a time: one 8-element load per row
const uint STEPS = HEAD_DIM / STEP;

shared vec4 row_tile[2u * STEP * TILE / 4u];  // [buffer][channel][row / 4]
shared vec4 key_tile[2u * STEP * TILE / 4u];  // [buffer][channel][key / 4]

DEFINE_LOAD8(load_query, queries)
DEFINE_LOAD8(load_key, keys)

uint rows_per_group() { return (pc.n_heads / pc.n_kv_heads) * pc.window_count; }
uint row_position(uint row) { return pc.window_first + (row % pc.window_count) * pc.window_stride; }

// The largest position among rows [row0, row_end): a head's rows ascend.
uint last_position(uint row0, uint row_end) {
  const uint last = row_end - 1u;
  return row0 / pc.window_count != last / pc.window_count ? row_position(pc.window_count - 1u) : row_position(last);
}

// This invocation's staged piece at `step`: a window row's 8 channels
// (invocations 0-63) or a key's (64-127), zero past row_end or key_end.
void fetch_piece(uint g, uint row0, uint row_end, uint key0, uint key_end, uint step, out uvec4 a, out uvec4 b) {
  const uint t = gl_LocalInvocationIndex;
  a = uvec4(0);
  b = uvec4(0);
  if (t < TILE) {
    const uint row = row0 + t;
    if (row < row_end) load_query_raw((g * rows_per_group() + row) * HEAD_DIM + step * STEP, a, b);
  } else {
    const uint key = key0 + t - TILE;
    if (key < key_end) load_key_raw((g * pc.n_tokens + key) * HEAD_DIM + step * STEP, a, b);
  }
}

void store_piece(uint buffer_, uvec4 a, uvec4 b) {
  const uint t = gl_LocalInvocationIndex, lane = t % TILE;
  vec4 lo, hi;
  unpack8(a, b, lo, hi);
  const uint at = buffer_ * STEP * TILE / 4u + lane / 4u, component = lane % 4u;
  if (t < TILE) {
    [[unroll]] for (uint c = 0u; c < 4u; ++c) {
      row_tile[at + c * TILE / 4u][component] = lo[c] * pc.scale_log2;
      row_tile[at + (c + 4u) * TILE / 4u][component] = hi[c] * pc.scale_log2;
    }
  } else {
    [[unroll]] for (uint c = 0u; c < 4u; ++c) {
      key_tile[at + c * TILE / 4u][component] = lo[c];
      key_tile[at + (c + 4u) * TILE / 4u][component] = hi[c];
    }
  }
}

// s[a] holds the logits of row 4 (t / 8) + a with keys 4 (t % 8) .. + 3 (its
// .xyzw), s[4 + a] with keys 32 + 4 (t % 8) .. + 3. Every invocation calls it
// (barriers). Zero rows and keys past the ends.
void tile_logits(uint g, uint row0, uint row_end, uint key0, uint key_end, out vec4 s[8]) {
  const uint t = gl_LocalInvocationIndex, row_group = t / 8u, key_group = t % 8u;
  [[unroll]] for (uint a = 0u; a < 8u; ++a) s[a] = vec4(0.0);
  uvec4 piece_a, piece_b;
  fetch_piece(g, row0, row_end, key0, key_end, 0u, piece_a, piece_b);
  barrier();  // the previous tile's reads of buffer 0 are done
  store_piece(0u, piece_a, piece_b);
  barrier();
  for (uint step = 0u; step < STEPS; ++step) {
    const bool more = step + 1u < STEPS;
    if (more) fetch_piece(g, row0, row_end, key0, key_end, step + 1u, piece_a, piece_b);
    const uint base = (step % 2u) * STEP * TILE / 4u;
    [[unroll]] for (uint c = 0u; c < STEP; ++c) {
      const vec4 q = row_tile[base + c * TILE / 4u + row_group];
      const vec4 k_low = key_tile[base + c * TILE / 4u + key_group];
      const vec4 k_high = key_tile[base + c * TILE / 4u + 8u + key_group];
      [[unroll]] for (uint a = 0u; a < 4u; ++a) {
        s[a] += q[a] * k_low;
        s[4u + a] += q[a] * k_high;
      }
    }
    if (more) store_piece((step + 1u) % 2u, piece_a, piece_b);
    barrier();
  }
}

// The key that component c of s[a] multiplies.
uint logit_key(uint key0, uint a, uint c) { return key0 + (a < 4u ? 0u : 32u) + 4u * (gl_LocalInvocationIndex % 8u) + c; }
// The row that s[a] belongs to.
uint logit_row(uint row0, uint a) { return row0 + 4u * (gl_LocalInvocationIndex / 8u) + a % 4u; }
