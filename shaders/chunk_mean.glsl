// The mean of one head's n queries into shared `mean` (MEAN_WORKGROUP
// invocations, which the including kernel defines, with load_query).
// Invocation (group, chunk) sums queries group, group + MEAN_GROUPS, ... of one
// 16-byte chunk, then the groups' sums are added: one invocation per chunk
// walking all n queries, one load after another, took 16-20 µs at n = 128 on
// the H100 (docs/perf-experiments.md).
const uint MEAN_CHUNKS = HEAD_DIM / 8u, MEAN_GROUPS = MEAN_WORKGROUP / MEAN_CHUNKS;  // d <= 512: at least 2 groups
const uint MEAN_SUMS = MEAN_GROUPS * HEAD_DIM;
shared float partial_sums[MEAN_SUMS];
shared float mean[HEAD_DIM];

void chunk_mean(uint head, uint n) {
  const uint tid = gl_LocalInvocationIndex;
  if (tid < MEAN_GROUPS * MEAN_CHUNKS) {
    const uint group = tid / MEAN_CHUNKS, chunk = tid % MEAN_CHUNKS;
    vec4 sum_lo = vec4(0), sum_hi = vec4(0);
    for (uint i = group; i < n; i += MEAN_GROUPS) {
      vec4 lo, hi;
      load_query((head * n + i) * HEAD_DIM + chunk * 8u, lo, hi);
      sum_lo += lo;
      sum_hi += hi;
    }
    for (uint c = 0u; c < 4u; ++c) {
      partial_sums[group * HEAD_DIM + chunk * 8u + c] = sum_lo[c];
      partial_sums[group * HEAD_DIM + chunk * 8u + 4u + c] = sum_hi[c];
    }
  }
  barrier();
  for (uint c = tid; c < HEAD_DIM; c += MEAN_WORKGROUP) {
    float sum = 0.0;
    for (uint group = 0u; group < MEAN_GROUPS; ++group) sum += partial_sums[group * HEAD_DIM + c];
    mean[c] = sum / float(n);
  }
  barrier();
}
