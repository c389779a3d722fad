// Shared by the top-k kernels. A row's exact top k is found by a radix select
// over the scores as order-preserving 32-bit keys: digits of up to 11 bits fix
// the k-th largest key T and how many keys equal to T are taken (the first
// ones in index order); then every key above T, and those equal to it, are
// written in index order. topk_row.comp does all of it in one workgroup per
// row (short rows); topk_digit.comp (three digits: 11, 11 and 10 bits),
// topk_count.comp and topk_write.comp spread each pass of a long row over
// `slices` workgroups. The including kernel declares `scores` (and `indices`
// if it writes them) first.
layout(local_size_x = 256) in;
const uint WORKGROUP = 256u;
const uint SLICE = TOPK_SLICE;
const uint PER_INVOCATION = SLICE / WORKGROUP;  // loads in flight per invocation (load_keys)
const uint BINS_PER_INVOCATION = TOPK_BINS / WORKGROUP;

layout(push_constant) uniform TopKPush { TOPK_FIELDS } pc;

// Larger float, larger key; -0 counts as +0 and NaN as the lowest score.
uint orderable(float f) {
  if (isnan(f)) return 0u;
  uint u = floatBitsToUint(f == 0.0 ? 0.0 : f);
  return (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u);
}

// The keys of a row's candidates first + e * WORKGROUP + this invocation (e <
// PER_INVOCATION), every load issued before any is used: addresses past the
// row are clamped to its last candidate, so that no load is conditional (the
// caller drops those keys where they would count).
void load_keys(uint row, uint first, out uint keys[PER_INVOCATION]) {
  float values[PER_INVOCATION];
  [[unroll]] for (uint e = 0u; e < PER_INVOCATION; ++e)
    values[e] = scores[row * pc.row_stride + min(first + e * WORKGROUP + gl_LocalInvocationIndex, pc.n - 1u)];
  [[unroll]] for (uint e = 0u; e < PER_INVOCATION; ++e) keys[e] = orderable(values[e]);
}

// Workgroup-wide exclusive prefix sum (Hillis-Steele in shared memory); call
// from uniform control flow. `total` is the sum over every invocation.
shared uvec2 scan_buffer[WORKGROUP];
uvec2 exclusive_scan(uvec2 value, out uvec2 total) {
  const uint tid = gl_LocalInvocationIndex;
  scan_buffer[tid] = value;
  barrier();
  for (uint offset = 1u; offset < WORKGROUP; offset <<= 1u) {
    uvec2 add = tid >= offset ? scan_buffer[tid - offset] : uvec2(0);
    barrier();
    scan_buffer[tid] += add;
    barrier();
  }
  total = scan_buffer[WORKGROUP - 1u];
  uvec2 before = scan_buffer[tid] - value;
  barrier();
  return before;
}

// Invocation t holds the counts of bins TOPK_BINS - 1 - (t * BINS_PER_INVOCATION
// + j): the bins in descending order. Returns, in every invocation, the bin
// where the count of keys in higher bins first reaches `remaining`, and that
// count. Call from uniform control flow.
shared uvec2 chosen_bin;
uvec2 choose_bin(uint counts[BINS_PER_INVOCATION], uint remaining) {
  uint own = 0u;
  [[unroll]] for (uint j = 0u; j < BINS_PER_INVOCATION; ++j) own += counts[j];
  uvec2 total;
  uint above = exclusive_scan(uvec2(own, 0u), total).x;
  [[unroll]] for (uint j = 0u; j < BINS_PER_INVOCATION; ++j) {
    if (above < remaining && above + counts[j] >= remaining)
      chosen_bin = uvec2(TOPK_BINS - 1u - (gl_LocalInvocationIndex * BINS_PER_INVOCATION + j), above);
    above += counts[j];
  }
  barrier();
  uvec2 chosen = chosen_bin;
  barrier();
  return chosen;
}

// Where candidate i's key sits in a staged array: one word of padding per 32,
// so that invocations walking contiguous segments of up to 32 candidates read
// different banks (unpadded, a segment of 32 put every invocation on one bank).
uint staged(uint i) { return i + i / 32u; }

// A candidate's key, from shared memory: topk_row.comp stages its whole row
// and defines candidate_key itself (TOPK_STAGED); topk_count.comp and
// topk_write.comp stage their slice with stage_slice. Reading the scores in
// place instead, a loop of loads ran one memory latency per candidate of an
// invocation's segment.
#ifndef TOPK_STAGED
shared uint slice_keys[SLICE + SLICE / 32u];
uint candidate_key(uint row, uint i) { return slice_keys[staged(i % SLICE)]; }

// Call from uniform control flow.
void stage_slice(uint row, uint slice) {
  uint keys[PER_INVOCATION];
  load_keys(row, slice * SLICE, keys);
  [[unroll]] for (uint e = 0u; e < PER_INVOCATION; ++e) slice_keys[staged(e * WORKGROUP + gl_LocalInvocationIndex)] = keys[e];
  barrier();
}
#endif

// Keys above and equal to `threshold` among a row's candidates [first, end).
uvec2 count_range(uint row, uint first, uint end, uint threshold) {
  uvec2 counts = uvec2(0);
  for (uint i = first; i < end; ++i) {
    uint key = candidate_key(row, i);
    counts += uvec2(key > threshold ? 1u : 0u, key == threshold ? 1u : 0u);
  }
  return counts;
}

#ifdef TOPK_WRITES
// Writes the selected indices among candidates [first, end), given `earlier`:
// the keys above and equal to T before `first` in the row. Keys equal to T are
// taken while fewer than `remaining` came before.
void write_range(uint row, uint first, uint end, uint threshold, uint remaining, uvec2 earlier) {
  uint equal_rank = earlier.y, slot = earlier.x + min(earlier.y, remaining);
  for (uint i = first; i < end; ++i) {
    uint key = candidate_key(row, i);
    bool take = key > threshold;
    if (key == threshold) take = equal_rank++ < remaining;
    if (take) indices[row * pc.out_stride + slot++] = int(i);
  }
}

// The -1 padding after the k indices (if `pads`), and every index of
// candidates [begin, end) when n <= k; false when nothing is left to select.
bool write_padding_and_trivial_rows(uint row, uint begin, uint end, bool pads) {
  const uint k = min(pc.k, pc.n), tid = gl_LocalInvocationIndex;
  if (pads)
    for (uint i = k + tid; i < pc.out_stride; i += WORKGROUP) indices[row * pc.out_stride + i] = -1;
  if (pc.n <= pc.k)
    for (uint i = begin + tid; i < end; i += WORKGROUP) indices[row * pc.out_stride + i] = int(i);
  return pc.n > pc.k && k > 0u;
}
#endif
