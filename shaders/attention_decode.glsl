// The body of attention_decode.comp and sparse_attention_decode.comp: one
// query per head (a decode step) over one split of a key list, for up to ROWS
// heads that share the list. The tile kernel (attention_tile.glsl) stages keys
// and values in shared memory and was bound by shared-memory traffic at ~600
// GB/s on the H100; here no key or value passes through shared memory.
//
// LANES invocations (a power of two within a subgroup) own one key at a time,
// each lane 8 channels per 16-byte load; a workgroup is KEY_GROUPS such groups.
// Every lane issues the key and value loads of UNROLL keys before it uses any
// (values do not depend on the scores), and those of the next UNROLL keys
// before it uses these, so enough bytes are in flight to cover memory
// latency. Dot products are summed over the LANES lanes by xor shuffles, which
// leave every lane of a group with the same score, so each lane keeps the
// online softmax (max, sum in log2 units) of its group and the output of its
// own channels in registers. The groups are combined once per
// split through shared memory; attention_merge combines the splits, or, for a
// list of one head whose splits one round of merge_row's loads covers
// (pc.merge_here: per-head lists, and dense decode where H = G), the last
// split of the row to finish does, which saves the merge's dependent dispatch
// (H100, Quest and Fier decode: 1.2-1.4 us a step; docs/perf-experiments.md).
// That needs no workgroup to wait for another, only an arrival counter.
// The including kernel defines KEY_LIST: 0 = keys [0, position], 1 = a list.
layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(constant_id = 2) const uint ROWS = 4;    // heads per workgroup (pc.heads_per_block of them used)
layout(constant_id = 3) const uint LANES = 16;  // lanes per key
layout(constant_id = 4) const uint WORKGROUP = 128;
layout(constant_id = 5) const uint UNROLL = 2;  // keys a group loads before using any
layout(local_size_x_id = 4) in;

#include "common.glsl"
#include "load.glsl"
#include "attention_bindings.glsl"

const uint CHUNKS = HEAD_DIM / 8u;                       // 16-byte pieces of a row (fp16)
const uint PER_LANE = (CHUNKS + LANES - 1u) / LANES;     // pieces each lane owns
const uint KEY_GROUPS = WORKGROUP / LANES;

// The splits of each (list, head block) that have finished, and what
// attention_merge would write, for the rows this kernel merges itself.
layout(std430, binding = 5 + KEY_LIST) coherent buffer SplitCount { uint split_count[]; };
layout(std430, binding = 6 + KEY_LIST) writeonly buffer AttentionOutput { float attention_output[]; };  // [H, d]
layout(std430, binding = 7 + KEY_LIST) writeonly buffer LogSumExp { float log_sum_exp[]; };            // [H]

// Also merge_row's: KEY_GROUPS >= its MERGE_GROUPS, as HEAD_DIM >= 4 * LANES.
shared float group_max[KEY_GROUPS];
shared float group_sum[KEY_GROUPS];
shared float group_output[KEY_GROUPS * HEAD_DIM];

// The keys (-1: none) of one pass's UNROLL slots of this lane's group, with
// its pieces of their keys and values, raw.
void load_slots(uint slot0, uint slot_end, uint list, uint kv_head, uint key_limit, uint group, uint lane,
                out int key[UNROLL], out uvec4 k[UNROLL][PER_LANE][2], out uvec4 v[UNROLL][PER_LANE][2]) {
  [[unroll]] for (uint u = 0; u < UNROLL; ++u) {
    const uint slot = slot0 + u * KEY_GROUPS + group;
    key[u] = slot < slot_end ? slot_key(list, slot) : -1;
    if (key[u] >= int(key_limit)) key[u] = -1;
    [[unroll]] for (uint i = 0; i < PER_LANE; ++i) {
      const uint chunk = lane + i * LANES;
      k[u][i][0] = k[u][i][1] = v[u][i][0] = v[u][i][1] = uvec4(0);
#if KEY_LIST
      if (key[u] >= 0 && chunk < CHUNKS) {
        const uint e = (kv_head * pc.n_tokens + uint(key[u])) * HEAD_DIM + chunk * 8u;
#else
      // Dense keys load whatever the slot: a slot past the causal limit loads
      // key 0, which gets weight 0. Without the condition `dense_partial` went
      // from 185.7-186.1 to 184.7-185.0 us at 128k on the H100; the lists'
      // keys gained nothing and QuoKA decode's lost 0.3 us, so they keep it
      // (docs/perf-experiments.md).
      if (chunk < CHUNKS) {
        const uint e = (kv_head * pc.n_tokens + uint(max(key[u], 0))) * HEAD_DIM + chunk * 8u;
#endif
        load_key_raw(e, k[u][i][0], k[u][i][1]);
        load_value_raw(e, v[u][i][0], v[u][i][1]);
      }
    }
  }
}

shared uint last_to_finish;

vec4 load_partial_quad(uint e) {
  return vec4(partial_output[e], partial_output[e + 1u], partial_output[e + 2u], partial_output[e + 3u]);
}
void store_output_quad(uint e, vec4 value) {
  [[unroll]] for (uint c = 0u; c < 4u; ++c) attention_output[e + c] = value[c];
}

#include "merge_splits.glsl"

void main() {
  const uint split = gl_WorkGroupID.x;
  const uint list = gl_WorkGroupID.z / pc.head_blocks, block = gl_WorkGroupID.z % pc.head_blocks;
  const uint first_head = list * pc.heads_per_list + block * pc.heads_per_block;
  const uint rows = min(pc.heads_per_block, pc.heads_per_list - block * pc.heads_per_block);
  const uint kv_head = first_head / (pc.n_heads / pc.n_kv_heads);
  const uint lane = gl_SubgroupInvocationID % LANES;
  const uint group = (gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID) / LANES;
  const uint key_limit = causal_limit(0u);  // the step's one query: keys [0, position]

  // Queries, keys and values stay in their raw words until used (half the
  // registers for fp16/bf16), and the scale is applied to the summed score.
  // Every loop over ROWS, UNROLL and PER_LANE is unrolled: an array indexed by
  // a loop counter that the compiler keeps would live in local memory (the
  // H100's compiler spilled 480-576 bytes per invocation without the hints).
  uvec4 query[ROWS][PER_LANE][2];
  [[unroll]] for (uint r = 0; r < ROWS; ++r)
    [[unroll]] for (uint i = 0; i < PER_LANE; ++i) {
      const uint chunk = lane + i * LANES;
      query[r][i][0] = query[r][i][1] = uvec4(0);
      if (r < rows && chunk < CHUNKS) load_query_raw((first_head + r) * HEAD_DIM + chunk * 8u, query[r][i][0], query[r][i][1]);
    }

#if KEY_LIST
  const uint slots = pc.list_length + pc.own_count;
#else
  const uint slots = key_limit;
#endif
  // The splits deal out the slots a pass at a time (split s takes passes s,
  // s + n_splits, ...), so that a head's splits read one stretch of K and V
  // together. As contiguous runs, dense decode's 64 splits a head read 64
  // stretches at once and took 7.6 / 14.9 us longer than a plain read of the
  // same bytes at 32k / 128k on the H100; dealt out, the step went 62.0 ->
  // 60.7 us and 195.4 -> 191.7 (sparse lists unchanged; docs/perf-experiments.md).
  const uint slot_step = pc.n_splits * KEY_GROUPS * UNROLL;
  const uint slot_begin = split * KEY_GROUPS * UNROLL, slot_end = slots;

  float row_max[ROWS], row_sum[ROWS];
  vec4 output_[ROWS][PER_LANE][2];
  [[unroll]] for (uint r = 0; r < ROWS; ++r) {
    row_max[r] = LOWEST_FLOAT;
    row_sum[r] = 0.0;
    [[unroll]] for (uint i = 0; i < PER_LANE; ++i) output_[r][i][0] = output_[r][i][1] = vec4(0);
  }

  // The next pass's keys and values are loaded before this pass's are used, so
  // loads stay in flight while a pass computes (H100 dense decode: 66.8 -> 63.1
  // us at 32k, 213 -> 197 at 128k; docs/perf-experiments.md).
  int next_key[UNROLL];
  uvec4 next_k[UNROLL][PER_LANE][2], next_v[UNROLL][PER_LANE][2];
  load_slots(slot_begin, slot_end, list, kv_head, key_limit, group, lane, next_key, next_k, next_v);
  for (uint slot0 = slot_begin; slot0 < slot_end; slot0 += slot_step) {
    int key[UNROLL];
    uvec4 k[UNROLL][PER_LANE][2], v[UNROLL][PER_LANE][2];
    [[unroll]] for (uint u = 0; u < UNROLL; ++u) {
      key[u] = next_key[u];
      [[unroll]] for (uint i = 0; i < PER_LANE; ++i) {
        k[u][i][0] = next_k[u][i][0];
        k[u][i][1] = next_k[u][i][1];
        v[u][i][0] = next_v[u][i][0];
        v[u][i][1] = next_v[u][i][1];
      }
    }
    load_slots(slot0 + slot_step, slot_end, list, kv_head, key_limit, group, lane, next_key, next_k, next_v);
    float score[ROWS][UNROLL];
    [[unroll]] for (uint u = 0; u < UNROLL; ++u)
      [[unroll]] for (uint i = 0; i < PER_LANE; ++i) {
        vec4 k_lo, k_hi;
        unpack8(k[u][i][0], k[u][i][1], k_lo, k_hi);
        [[unroll]] for (uint r = 0; r < ROWS; ++r) {
          vec4 q_lo, q_hi;
          unpack8(query[r][i][0], query[r][i][1], q_lo, q_hi);
          const float s = dot(q_lo, k_lo) + dot(q_hi, k_hi);
          score[r][u] = i == 0u ? s : score[r][u] + s;
        }
      }
    [[unroll]] for (uint r = 0; r < ROWS; ++r) {
      float new_max = row_max[r];
      [[unroll]] for (uint u = 0; u < UNROLL; ++u) {
        float s = score[r][u];
        [[unroll]] for (uint mask = LANES / 2u; mask > 0u; mask /= 2u) s += subgroupShuffleXor(s, mask);
        score[r][u] = s * pc.scale_log2;
        if (key[u] >= 0) new_max = max(new_max, score[r][u]);
      }
      const float alpha = exp2(row_max[r] - new_max);  // 1 while no key was valid (both LOWEST_FLOAT)
      row_max[r] = new_max;
      row_sum[r] *= alpha;
      [[unroll]] for (uint i = 0; i < PER_LANE; ++i) {
        output_[r][i][0] *= alpha;
        output_[r][i][1] *= alpha;
      }
      [[unroll]] for (uint u = 0; u < UNROLL; ++u) {
        score[r][u] = key[u] >= 0 ? exp2(score[r][u] - new_max) : 0.0;  // now the weight
        row_sum[r] += score[r][u];
      }
    }
    [[unroll]] for (uint u = 0; u < UNROLL; ++u)
      [[unroll]] for (uint i = 0; i < PER_LANE; ++i) {
        vec4 v_lo, v_hi;
        unpack8(v[u][i][0], v[u][i][1], v_lo, v_hi);
        [[unroll]] for (uint r = 0; r < ROWS; ++r) {
          output_[r][i][0] += score[r][u] * v_lo;
          output_[r][i][1] += score[r][u] * v_hi;
        }
      }
  }

  // Combine the key groups, one row at a time (shared memory holds one row).
  // The loop runs to the constant ROWS, not `rows`: indexing the register
  // arrays with a run-time value would move them to local memory.
  [[unroll]] for (uint r = 0; r < ROWS; ++r) {
    if (lane == 0u) group_max[group] = row_max[r];
    barrier();
    float split_max = LOWEST_FLOAT;
    [[unroll]] for (uint g = 0; g < KEY_GROUPS; ++g) split_max = max(split_max, group_max[g]);
    const float weight = row_max[r] == LOWEST_FLOAT ? 0.0 : exp2(row_max[r] - split_max);
    if (lane == 0u) group_sum[group] = row_sum[r] * weight;
    [[unroll]] for (uint i = 0; i < PER_LANE; ++i) {
      const uint chunk = lane + i * LANES;
      if (chunk >= CHUNKS) continue;
      [[unroll]] for (uint c = 0; c < 4u; ++c) {
        group_output[group * HEAD_DIM + chunk * 8u + c] = output_[r][i][0][c] * weight;
        group_output[group * HEAD_DIM + chunk * 8u + 4u + c] = output_[r][i][1][c] * weight;
      }
    }
    barrier();
    const uint head = first_head + r;
    for (uint c = gl_LocalInvocationIndex; c < HEAD_DIM && r < rows; c += WORKGROUP) {
      float total = 0.0;
      [[unroll]] for (uint g = 0; g < KEY_GROUPS; ++g) total += group_output[g * HEAD_DIM + c];
      partial_output[(head * pc.n_splits + split) * HEAD_DIM + c] = total;
    }
    if (gl_LocalInvocationIndex == 0u && r < rows) {
      float total = 0.0;
      [[unroll]] for (uint g = 0; g < KEY_GROUPS; ++g) total += group_sum[g];
      partial_stats[head * pc.n_splits + split] = vec2(split_max, total);
    }
    barrier();
  }

  if (ROWS == 1u && pc.merge_here != 0u) {
    memoryBarrierBuffer();
    barrier();
    if (gl_LocalInvocationIndex == 0u) {
      const uint counter = gl_WorkGroupID.z;
      const bool last = atomicAdd(split_count[counter], 1u) == pc.n_splits - 1u;
      if (last) split_count[counter] = 0u;  // ready for the next step
      last_to_finish = last ? 1u : 0u;
    }
    barrier();
    if (last_to_finish == 0u) return;
    memoryBarrierBuffer();
    merge_row(first_head);  // n_queries is 1: the row is the head
  }
}
