// Combines the key splits of one (head, query) row: the softmax-weighted sum of
// the splits' partial outputs, and the row's log-sum-exp of the scaled logits
// (natural log), which the metrics turn into probabilities. Used by
// attention_merge.comp (a workgroup per row) and by attention_decode.glsl (the
// last split of a row to finish merges it).
//
// Invocations own 4 channels of the output and every MERGE_GROUPS-th split.
// Each issues the loads of a batch of its splits' (max, sum) and channels
// before it uses any and keeps a running max, sum and output over its splits,
// so a row costs one round of loads per batch and one barrier, after which the
// groups' results meet in shared memory. (Workgroup reductions of the row's max
// and sum over the splits' stats, the outputs read after them, took two rounds
// of loads and five barriers.)
//
// The includer declares HEAD_DIM and WORKGROUP (at least HEAD_DIM / 4);
// partial_stats (vec2, [rows, n_splits]) and log_sum_exp (float, [rows]);
// vec4 load_partial_quad(e) and store_output_quad(e, value), which read 4
// channels of partial_output ([rows, n_splits, d]) and write 4 of the output
// ([rows, d]) from float index e, a multiple of 4 (as vec4 where the buffer
// is one: the merge kernel's float loads took 64 registers against 40 and
// 0.5 us more on the H100); the push constant pc with n_splits; and shared
// float arrays group_max and group_sum of at least MERGE_GROUPS entries and
// group_output of at least MERGE_GROUPS * HEAD_DIM, free for this use.
const uint QUADS = HEAD_DIM / 4u;
const uint MERGE_GROUPS = WORKGROUP / QUADS;
const uint MERGE_BATCH = 8u;  // splits an invocation loads before using any

// Call from uniform control flow.
void merge_row(uint row) {
  const uint tid = gl_LocalInvocationIndex, quad = tid % QUADS, merge_group = tid / QUADS;
  if (merge_group < MERGE_GROUPS) {
    float running_max = LOWEST_FLOAT, running_sum = 0.0;
    vec4 running_output = vec4(0.0);
    for (uint first = merge_group; first < pc.n_splits; first += MERGE_GROUPS * MERGE_BATCH) {
      vec2 stats[MERGE_BATCH];
      vec4 partial[MERGE_BATCH];
      [[unroll]] for (uint b = 0u; b < MERGE_BATCH; ++b) {
        const uint s = first + b * MERGE_GROUPS, e = (row * pc.n_splits + s) * HEAD_DIM + quad * 4u;
        stats[b] = vec2(LOWEST_FLOAT, 0.0);
        partial[b] = vec4(0.0);
        if (s < pc.n_splits) {
          stats[b] = partial_stats[row * pc.n_splits + s];
          partial[b] = load_partial_quad(e);
        }
      }
      float new_max = running_max;
      [[unroll]] for (uint b = 0u; b < MERGE_BATCH; ++b) new_max = max(new_max, stats[b].x);
      const float alpha = exp2(running_max - new_max);  // 1 while both are LOWEST_FLOAT, with nothing to scale
      running_max = new_max;
      running_sum *= alpha;
      running_output *= alpha;
      [[unroll]] for (uint b = 0u; b < MERGE_BATCH; ++b) {
        const float w = stats[b].x == LOWEST_FLOAT ? 0.0 : exp2(stats[b].x - new_max);
        running_sum += stats[b].y * w;
        running_output += partial[b] * w;
      }
    }
    if (quad == 0u) {
      group_max[merge_group] = running_max;
      group_sum[merge_group] = running_sum;
    }
    [[unroll]] for (uint c = 0u; c < 4u; ++c) group_output[merge_group * HEAD_DIM + quad * 4u + c] = running_output[c];
  }
  barrier();
  if (tid < QUADS) {
    float row_max = LOWEST_FLOAT;
    for (uint g = 0u; g < MERGE_GROUPS; ++g) row_max = max(row_max, group_max[g]);
    float row_sum = 0.0;
    vec4 total = vec4(0.0);
    for (uint g = 0u; g < MERGE_GROUPS; ++g) {
      const float w = group_max[g] == LOWEST_FLOAT ? 0.0 : exp2(group_max[g] - row_max);
      row_sum += group_sum[g] * w;
      [[unroll]] for (uint c = 0u; c < 4u; ++c) total[c] += group_output[g * HEAD_DIM + tid * 4u + c] * w;
    }
    store_output_quad(row * HEAD_DIM + tid * 4u, total / row_sum);
    if (tid == 0u) log_sum_exp[row] = (row_max + log2(row_sum)) * 0.6931471805599453;
  }
}
