// How keydiff_key_sums.comp, keydiff_scores.comp and sparq_scores.comp read a
// run of keys: an invocation owns 8 channels (a chunk) of one key lane, so a key
// row is read by neighbouring invocations, and holds UNROLL keys a round in
// registers while the round's partial sums meet in shared memory. The including
// kernel declares `keys`, load_key (DEFINE_LOAD8) and push constants `pc` with
// `n_tokens`.

const uint THREADS = 128u;
const uint CHUNKS = HEAD_DIM / 8u;
const uint LANES = THREADS / CHUNKS;  // keys read side by side
const uint UNROLL = 4u;               // keys an invocation holds a round
const uint ROUND_KEYS = LANES * UNROLL;

uint key_chunk() { return gl_LocalInvocationIndex % CHUNKS; }
uint key_lane() { return gl_LocalInvocationIndex / CHUNKS; }
bool has_key_lane() { return key_lane() < LANES; }  // CHUNKS need not divide THREADS

// Issues the loads of this invocation's keys of the round that starts at key
// round_first of the run [first, first + count) of KV head g; keys past the
// run are not loaded.
void load_round(uint g, uint first, uint count, uint round_first, inout uvec4 raw_a[UNROLL], inout uvec4 raw_b[UNROLL]) {
  const uint row_first = (g * pc.n_tokens + first) * HEAD_DIM + key_chunk() * 8u;
  [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
    const uint key = round_first + key_lane() + LANES * u;
    if (has_key_lane() && key < count) load_key_raw(row_first + key * HEAD_DIM, raw_a[u], raw_b[u]);
  }
}
