// Fier's quantisation of one block of keys, shared by fier_quantize_keys (the
// cache's blocks) and fier_approx_scores (the block holding a step's last
// candidate, quantised over the candidates only): per channel the block's lo =
// min and hi = max, stored as one fp16 pair; per token and channel one bit, 1
// when hi > lo and (k - lo) / (hi - lo) >= 0.5. Expects HEAD_DIM,
// ELEMENT_TYPE, load.glsl and DEFINE_LOAD8(load_key, keys) over the key cache.

shared float block_low[HEAD_DIM];
shared float block_high[HEAD_DIM];
shared uint block_pairs[HEAD_DIM];  // packHalf2x16(lo, hi): what the cache stores

// Element c of key row `row` ([G, T, d] rows), in fp32.
float key_element(uint row, uint c) {
  const uint e = row * HEAD_DIM + c, word = ELEMENT_TYPE == ELEMENT_F32 ? e : e / 2u;  // keys are uvec4s
  return element_in_word(keys[word / 4u][word % 4u], e);
}

// The bounds of key rows [first_row, end_row) (end_row > first_row) into
// block_low, block_high and block_pairs: an invocation per channel, eight rows'
// loads in flight at a time. Call from uniform control flow; ends with a barrier.
void quantize_block_bounds(uint first_row, uint end_row) {
  for (uint c = gl_LocalInvocationIndex; c < HEAD_DIM; c += gl_WorkGroupSize.x) {
    float lowest = 3.402823466e38, highest = -3.402823466e38;
    for (uint r = first_row; r < end_row; r += 8u) {
      float v[8];
      // rows past the block repeat its last: harmless to a min and a max
      [[unroll]] for (uint u = 0u; u < 8u; ++u) v[u] = key_element(min(r + u, end_row - 1u), c);
      [[unroll]] for (uint u = 0u; u < 8u; ++u) {
        lowest = min(lowest, v[u]);
        highest = max(highest, v[u]);
      }
    }
    block_low[c] = lowest;
    block_high[c] = highest;
    block_pairs[c] = packHalf2x16(vec2(lowest, highest));
  }
  barrier();
}

// Word `word` of key row `row`'s bits (channels 32 word .. 32 word + 31), against
// the bounds in block_low and block_high. The test is 2 (k - lo) >= hi - lo:
// a division may round (k - lo) / (hi - lo) below 0.5 where k sits exactly
// halfway, as the H100's did (common in fp16 keys; docs/perf-experiments.md).
uint quantize_key_word(uint row, uint word) {
  uint packed = 0u;
  for (uint part = 0u; part < 4u; ++part) {
    vec4 lo, hi;
    load_key(row * HEAD_DIM + word * 32u + part * 8u, lo, hi);
    for (uint c = 0u; c < 8u; ++c) {
      const uint channel = word * 32u + part * 8u + c;
      const float value = c < 4u ? lo[c] : hi[c - 4u], range = block_high[channel] - block_low[channel];
      if (range > 0.0 && 2.0 * (value - block_low[channel]) >= range) packed |= 1u << (part * 8u + c);
    }
  }
  return packed;
}
