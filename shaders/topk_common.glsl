// Shared by the top-k kernels. A row's exact top k is found by a radix select
// over the scores as order-preserving 32-bit keys: digits of up to 11 bits fix
// the k-th largest key T and how many keys equal to T are taken (the first
// ones in index order); then every key above T, and those equal to it, are
// written in index order (layouts.h names the kernels). The including kernel
// defines TOPK_WORKGROUP; one that selects among candidates staged in shared
// memory also defines TOPK_CANDIDATES, candidate_key(i) and candidate_index(i)
// (where its i-th candidate came from), and declares `indices`.
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(local_size_x = TOPK_WORKGROUP) in;
const uint WORKGROUP = TOPK_WORKGROUP;
const uint BINS_PER_INVOCATION = TOPK_BINS / WORKGROUP;

layout(push_constant) uniform TopKPush { TOPK_FIELDS } pc;

// WORKGROUP / the device's subgroup size (engine/kernels/topk.cpp).
layout(constant_id = 1) const uint SUBGROUPS = WORKGROUP / 32u;

// Larger float, larger key; -0 counts as +0 and NaN as the lowest score.
uint orderable(float f) {
  if (isnan(f)) return 0u;
  uint u = floatBitsToUint(f == 0.0 ? 0.0 : f);
  return (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u);
}

// Per-subgroup sums posted for a workgroup-wide scan or search. Every
// subgroup reads them itself, a subgroup's width at a time, after one barrier:
// a first subgroup scanning them for the others took a barrier more.
shared uvec2 subgroup_sums[SUBGROUPS];

// Workgroup-wide exclusive prefix sum of two counts at once. Call from
// uniform control flow. `total` is the sum over every invocation.
uvec2 exclusive_scan(uvec2 value, out uvec2 total) {
  const uvec2 inclusive = subgroupInclusiveAdd(value);
  if (gl_SubgroupInvocationID == gl_SubgroupSize - 1u) subgroup_sums[gl_SubgroupID] = inclusive;
  barrier();
  uvec2 before = inclusive - value;
  total = uvec2(0);
  for (uint first = 0u; first < gl_NumSubgroups; first += gl_SubgroupSize) {
    const uint s = first + gl_SubgroupInvocationID;
    const uvec2 sum = s < gl_NumSubgroups ? subgroup_sums[s] : uvec2(0);
    before += subgroupAdd(s < gl_SubgroupID ? sum : uvec2(0));
    total += subgroupAdd(sum);
  }
  barrier();  // every read above comes before the next post
  return before;
}

// A radix select's progress: keys whose bits under `mask` equal `prefix` may
// still hold T; `remaining` of the k are still to be taken among them.
struct Select {
  uint prefix, mask, remaining;
};

shared uint histogram[TOPK_BINS];

// Reads the histogram in descending bin order (invocation t holds bins
// TOPK_BINS - 1 - (t * BINS_PER_INVOCATION + j)) and returns (bin, keys in
// higher bins, keys in the bin) for the bin where the count of keys in higher
// bins first reaches `remaining`. With `clear`, each invocation zeroes the bins
// it read, so that the histogram is left clear for the next radix level without
// a pass and a barrier of its own. Call from uniform control flow, after a
// barrier that follows the histogram's last update. Two barriers: the
// subgroups' sums are posted, then the subgroup that holds the crossing
// finds the bin. No barrier follows the read of chosen_bin: its next write
// comes after the next call's first barrier, which every invocation reaches
// only after this read.
shared uvec3 chosen_bin;
uvec3 choose_bin(uint remaining, bool clear) {
  uint counts[BINS_PER_INVOCATION], own = 0u;
  [[unroll]] for (uint j = 0u; j < BINS_PER_INVOCATION; ++j) {
    const uint bin = TOPK_BINS - 1u - (gl_LocalInvocationIndex * BINS_PER_INVOCATION + j);
    counts[j] = histogram[bin];
    if (clear) histogram[bin] = 0u;
    own += counts[j];
  }
  const uint subgroup_total = subgroupAdd(own);
  if (gl_SubgroupInvocationID == 0u) subgroup_sums[gl_SubgroupID] = uvec2(subgroup_total, 0u);
  barrier();
  // The subgroup whose bins hold the crossing is the first whose running sum
  // reaches `remaining`: it is the count of those short of it, and the keys
  // in higher bins than its own are the largest running sum short of it.
  uint crossing = 0u, above = 0u, carry = 0u;
  for (uint first = 0u; first < gl_NumSubgroups; first += gl_SubgroupSize) {
    const uint s = first + gl_SubgroupInvocationID;
    const uint running = carry + subgroupInclusiveAdd(s < gl_NumSubgroups ? subgroup_sums[s].x : 0u);
    const bool short_of = s < gl_NumSubgroups && running < remaining;
    crossing += subgroupAdd(short_of ? 1u : 0u);
    above = max(above, subgroupMax(short_of ? running : 0u));
    carry = subgroupMax(running);
  }
  if (gl_SubgroupID == crossing) {
    above += subgroupExclusiveAdd(own);
    [[unroll]] for (uint j = 0u; j < BINS_PER_INVOCATION; ++j) {
      if (above < remaining && above + counts[j] >= remaining)
        chosen_bin = uvec3(TOPK_BINS - 1u - (gl_LocalInvocationIndex * BINS_PER_INVOCATION + j), above, counts[j]);
      above += counts[j];
    }
  }
  barrier();
  return chosen_bin;
}

// One radix level: fixes the digit under `digit_mask << shift` from the
// histogram of that digit over the keys that hold the prefix. Returns how
// many keys hold the longer prefix; leaves the histogram clear.
uint fix_digit(inout Select select, uint shift, uint digit_mask) {
  const uvec3 chosen = choose_bin(select.remaining, true);
  select.prefix |= chosen.x << shift;
  select.mask |= digit_mask << shift;
  select.remaining -= chosen.y;
  return chosen.z;
}

// Starts a radix select below the bits that all keys from ~extremes.y to
// extremes.x share (`extremes`: the largest key and the complement of the
// smallest), fixing those bits; returns the highest bit still free, -1 when
// the keys are all equal. Starting there spreads keys of one sign and size
// over the bins instead of piling them onto a few.
int fix_shared_bits(inout Select select, uvec2 extremes) {
  const int top = findMSB(extremes.x ^ ~extremes.y);
  select.mask = top < 0 ? 0xffffffffu : top == 31 ? 0u : ~((2u << uint(top)) - 1u);
  select.prefix = extremes.x & select.mask;
  return top;
}

// The digit a level fixes when `top` is its highest free bit: up to 11 bits,
// as (shift, mask).
uvec2 level_digit(int top) {
  const uint shift = uint(max(top - 10, 0));
  return uvec2(shift, (2u << (uint(top) - shift)) - 1u);
}

void clear_histogram() {
  for (uint b = gl_LocalInvocationIndex; b < TOPK_BINS; b += WORKGROUP) histogram[b] = 0u;
  barrier();
}

// Whether the row has a selection to make: false when n <= k (every index),
// k == 0, or when the candidates are pages (pc.page_size != 0) and every token
// fits the row. Every top-k kernel returns early on the same rows, so none
// leaves a long row's select state behind.
bool row_has_selection() {
  return pc.n > pc.k && pc.k > 0u && (pc.page_size == 0u || pc.n_tokens > pc.out_stride);
}

#ifdef TOPK_CANDIDATES
// Writes the index-th candidate as the slot-th of the row's selection: the
// index itself, or, for pages, the page's page_size tokens. The first
// TOPK_KEPT_PAGES pages are only noted here; write_kept_pages writes their
// tokens with every invocation (one invocation writing each of its pages'
// tokens in turn cost Quest's top-k 1.8 / 3.5 us at 32k / 128k on the H100).
shared uint kept_pages[TOPK_KEPT_PAGES];
void write_selected(uint row, uint slot, uint index) {
  if (pc.page_size == 0u) {
    indices[row * pc.out_stride + slot] = int(index);
  } else if (slot < TOPK_KEPT_PAGES) {
    kept_pages[slot] = index;
  } else {
    for (uint t = 0u; t < pc.page_size; ++t)
      indices[row * pc.out_stride + slot * pc.page_size + t] = int(index * pc.page_size + t);
  }
}

// The tokens of the pages write_selected noted. Call from uniform control
// flow after the selection's last write_selected.
void write_kept_pages(uint row) {
  if (pc.page_size == 0u) return;
  barrier();
  const uint tokens = min(pc.k, TOPK_KEPT_PAGES) * pc.page_size;
  for (uint i = gl_LocalInvocationIndex; i < tokens; i += WORKGROUP)
    indices[row * pc.out_stride + i] = int(kept_pages[i / pc.page_size] * pc.page_size + i % pc.page_size);
}

// The largest of `value` over the workgroup. Call from uniform control flow.
shared uvec2 subgroup_maxima[SUBGROUPS];
uvec2 workgroup_max(uvec2 value) {
  value = subgroupMax(value);
  if (gl_SubgroupInvocationID == 0u) subgroup_maxima[gl_SubgroupID] = value;
  barrier();
  for (uint s = 0u; s < gl_NumSubgroups; ++s) value = max(value, subgroup_maxima[s]);
  barrier();
  return value;
}

// Finishes a radix select among `count` staged candidates that hold the k
// largest, given `extremes` (the largest key and the complement of the
// smallest) of those that hold the prefix: the digits start below the bits
// that all of them share (fix_shared_bits); at most three levels. The histogram must
// be clear (clear_histogram once per kernel; fix_digit leaves it so).
//
// A level whose chosen bin holds exactly the keys still to take ends the
// select: every key with the prefix is taken, so T is the prefix itself (its
// lower bits zero) with every tie taken, and the lower digits need not be
// fixed. The selection is the same; with k much smaller than the candidates
// the bin often holds one key, and a level is ~1.5-2 us of barriers on the
// H100 (docs/perf-experiments.md).
Select select_within(uint count, Select select, uvec2 extremes) {
  int top = fix_shared_bits(select, extremes);
  while (top >= 0) {
    const uvec2 digit = level_digit(top);
    for (uint i = gl_LocalInvocationIndex; i < count; i += WORKGROUP) {
      const uint key = candidate_key(i);
      if ((key & select.mask) == select.prefix) atomicAdd(histogram[(key >> digit.x) & digit.y], 1u);
    }
    barrier();
    const uint in_bin = fix_digit(select, digit.x, digit.y);
    top = in_bin == select.remaining ? -1 : int(digit.x) - 1;
  }
  return select;
}

Select select_staged(uint count, Select select) {
  uvec2 extremes = uvec2(0u);
  for (uint i = gl_LocalInvocationIndex; i < count; i += WORKGROUP) {
    const uint key = candidate_key(i);
    if ((key & select.mask) == select.prefix) extremes = max(extremes, uvec2(key, ~key));
  }
  return select_within(count, select, workgroup_max(extremes));
}

// Keys above and equal to T among staged candidates [first, end).
uvec2 count_range(uint first, uint end, uint threshold) {
  uvec2 counts = uvec2(0);
  for (uint i = first; i < end; ++i) {
    uint key = candidate_key(i);
    counts += uvec2(key > threshold ? 1u : 0u, key == threshold ? 1u : 0u);
  }
  return counts;
}

// Writes the selected indices among staged candidates [first, end), given
// `earlier`: the keys above and equal to T before `first`. Keys equal to T are
// taken while fewer than `remaining` came before.
void write_range(uint row, uint first, uint end, uint threshold, uint remaining, uvec2 earlier) {
  uint equal_rank = earlier.y, slot = earlier.x + min(earlier.y, remaining);
  for (uint i = first; i < end; ++i) {
    uint key = candidate_key(i);
    bool take = key > threshold;
    if (key == threshold) take = equal_rank++ < remaining;
    if (take) write_selected(row, slot++, candidate_index(i));
  }
}

// The selection among `count` staged candidates, in their order: each
// invocation takes a contiguous segment, placed by a scan of the segments'
// counts. Call from uniform control flow.
void write_staged(uint row, uint count, uint threshold, uint remaining) {
  const uint segment = (count + WORKGROUP - 1u) / WORKGROUP;
  const uint first = min(gl_LocalInvocationIndex * segment, count), end = min(first + segment, count);
  uvec2 total;
  const uvec2 earlier = exclusive_scan(count_range(first, end, threshold), total);
  write_range(row, first, end, threshold, remaining, earlier);
}

// The -1 padding after the k indices, and every index when n <= k; false when
// nothing is left to select. Call before anything else.
//
// Pages (pc.page_size != 0) become Quest's token list: the k pages' tokens
// (placed by write_selected), then those of the page holding the last token,
// then -1; or every token when they fit the row. Pages 0..n-1 are the ones
// before that last page.
bool write_padding_and_trivial_rows(uint row) {
  const uint k = min(pc.k, pc.n), tid = gl_LocalInvocationIndex;
  if (pc.page_size != 0u) {
    const bool every_token = pc.n_tokens <= pc.out_stride || pc.n <= pc.k;
    const uint last_first = ((pc.n_tokens - 1u) / pc.page_size) * pc.page_size;
    const uint first = every_token ? 0u : k * pc.page_size;  // tokens before come from pages
    for (uint i = first + tid; i < pc.out_stride; i += WORKGROUP) {
      const uint token = every_token ? i : last_first + (i - first);
      indices[row * pc.out_stride + i] = token < pc.n_tokens ? int(token) : -1;
    }
    return row_has_selection();
  }
  for (uint i = k + tid; i < pc.out_stride; i += WORKGROUP) indices[row * pc.out_stride + i] = -1;
  if (pc.n <= pc.k)
    for (uint i = tid; i < pc.n; i += WORKGROUP) indices[row * pc.out_stride + i] = int(i);
  return row_has_selection();
}
#endif  // TOPK_CANDIDATES
