// The body of attention_partial.comp and sparse_attention_partial.comp: causal
// attention of a tile of (query head, query) rows over one split of a key list,
// with the keys and values of each slot read once for every head that shares
// the list (GQA). Online softmax in log2 units; unnormalised outputs and
// (max, sum) per row go to attention_merge. The including kernel defines
// KEY_LIST: 0 = keys [0, position] (dense), 1 = a selection plus own keys,
// and OUTPUTS_IN_SHARED: 1 keeps the rows' output accumulators in shared
// memory instead of registers, for lavapipe (the *_shared_outputs kernels;
// vk::DeviceInfo::costly_values_across_barriers), whose LLVM compile of 16
// accumulators an invocation kept across the loop's barriers took 9-13 s a
// variant, under 1 s from shared memory (docs/perf-experiments.md).
// engine/kernels/attention.cpp's tile_loop_iterations counts this kernel's loops per
// key tile: lavapipe ends an invocation's loops after 65535 iterations
// (vk::DeviceInfo::loop_limit), so the splits there are sized from it. Keep
// the two in step. (Unrolling the inner loops would cut the count, but lavapipe
// then took up to 70 s to compile a variant: docs/perf-experiments.md.)
layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(constant_id = 2) const uint ROWS = 16;
layout(constant_id = 3) const uint KEY_TILE = 32;
layout(constant_id = 4) const uint WORKGROUP = 128;
layout(local_size_x_id = 4) in;

#include "common.glsl"
#include "load.glsl"
#include "attention_bindings.glsl"

const uint CHUNKS = HEAD_DIM / 8;
const uint STRIDE = HEAD_DIM + 1;  // padding keeps the score loop free of bank conflicts
const uint ACCUMULATORS = (ROWS * HEAD_DIM + WORKGROUP - 1) / WORKGROUP;

shared float query_tile[ROWS * HEAD_DIM];
shared float kv_tile[KEY_TILE * STRIDE];
shared float p_tile[ROWS * KEY_TILE];
shared float row_max[ROWS];
shared float row_sum[ROWS];
shared float row_alpha[ROWS];
shared uint row_key_limit[ROWS];  // keys [0, limit) are causal for the row; 0 = no row
shared uint row_output[ROWS];     // (head * n_queries + query), where the row's results go
shared int tile_keys[KEY_TILE];   // key position of each slot in the current tile; -1 = none
#if OUTPUTS_IN_SHARED
shared float output_tile[ROWS * HEAD_DIM];
#define OUTPUT(a, o) output_tile[o]
#else
#define OUTPUT(a, o) accumulator[a]
#endif

void load_kv_tile(bool value, uint kv_head) {
  for (uint i = gl_LocalInvocationIndex; i < KEY_TILE * CHUNKS; i += WORKGROUP) {
    uint kk = i / CHUNKS, chunk = i % CHUNKS;
    int key = tile_keys[kk];
    vec4 lo = vec4(0), hi = vec4(0);
    if (key >= 0) {
      uint e = (kv_head * pc.n_tokens + uint(key)) * HEAD_DIM + chunk * 8u;
      if (value) load_value(e, lo, hi); else load_key(e, lo, hi);
    }
    uint base = kk * STRIDE + chunk * 8u;
    for (uint c = 0; c < 4; ++c) {
      kv_tile[base + c] = lo[c];
      kv_tile[base + 4u + c] = hi[c];
    }
  }
}

void main() {
  const uint tid = gl_LocalInvocationIndex;
  const uint split = gl_WorkGroupID.x, tile = gl_WorkGroupID.y;
  const uint list = gl_WorkGroupID.z / pc.head_blocks, block = gl_WorkGroupID.z % pc.head_blocks;
  const uint kv_head = list * pc.heads_per_list / (pc.n_heads / pc.n_kv_heads);

  for (uint row = tid; row < ROWS; row += WORKGROUP) {
    tile_row(row, tile, list, block, row_key_limit[row], row_output[row]);
    row_max[row] = LOWEST_FLOAT;
    row_sum[row] = 0.0;
  }
  barrier();
  for (uint i = tid; i < ROWS * CHUNKS; i += WORKGROUP) {
    uint row = i / CHUNKS, chunk = i % CHUNKS;
    vec4 lo = vec4(0), hi = vec4(0);
    if (row_key_limit[row] > 0u) load_query(row_output[row] * HEAD_DIM + chunk * 8u, lo, hi);
    for (uint c = 0; c < 4; ++c) {
      query_tile[row * HEAD_DIM + chunk * 8u + c] = lo[c] * pc.scale_log2;
      query_tile[row * HEAD_DIM + chunk * 8u + 4u + c] = hi[c] * pc.scale_log2;
    }
  }
  barrier();

#if KEY_LIST
  const uint slots = pc.list_length + pc.own_count;
#else
  uint slots = 0;
  for (uint row = 0; row < ROWS; ++row) slots = max(slots, row_key_limit[row]);
#endif
  const uint slot_begin = split * pc.split_keys;
  const uint slot_end = min(slot_begin + pc.split_keys, slots);

#if OUTPUTS_IN_SHARED
  for (uint o = tid; o < ROWS * HEAD_DIM; o += WORKGROUP) output_tile[o] = 0.0;
#else
  float accumulator[ACCUMULATORS];
  for (uint a = 0; a < ACCUMULATORS; ++a) accumulator[a] = 0.0;
#endif

  for (uint slot0 = slot_begin; slot0 < slot_end; slot0 += KEY_TILE) {
    for (uint kk = tid; kk < KEY_TILE; kk += WORKGROUP)
      tile_keys[kk] = slot0 + kk < slot_end ? slot_key(list, slot0 + kk) : -1;
    barrier();
    load_kv_tile(false, kv_head);
    barrier();
    for (uint i = tid; i < ROWS * KEY_TILE; i += WORKGROUP) {
      uint row = i / KEY_TILE, kk = i % KEY_TILE;
      int key = tile_keys[kk];
      float score = LOWEST_FLOAT;
      if (key >= 0 && uint(key) < row_key_limit[row]) {
        score = 0.0;
        for (uint c = 0; c < HEAD_DIM; ++c) score += query_tile[row * HEAD_DIM + c] * kv_tile[kk * STRIDE + c];
      }
      p_tile[i] = score;
    }
    barrier();
    for (uint row = tid; row < ROWS; row += WORKGROUP) {
      float old_max = row_max[row], new_max = old_max;
      for (uint kk = 0; kk < KEY_TILE; ++kk) new_max = max(new_max, p_tile[row * KEY_TILE + kk]);
      float alpha = 1.0, sum = 0.0;
      if (new_max != LOWEST_FLOAT) {
        alpha = exp2(old_max - new_max);  // 0 when old_max is -inf
        for (uint kk = 0; kk < KEY_TILE; ++kk) {
          float p = exp2(p_tile[row * KEY_TILE + kk] - new_max);
          p_tile[row * KEY_TILE + kk] = p;
          sum += p;
        }
      } else {
        for (uint kk = 0; kk < KEY_TILE; ++kk) p_tile[row * KEY_TILE + kk] = 0.0;
      }
      row_max[row] = new_max;
      row_sum[row] = row_sum[row] * alpha + sum;
      row_alpha[row] = alpha;
    }
    barrier();
    load_kv_tile(true, kv_head);
    barrier();
    for (uint a = 0; a < ACCUMULATORS; ++a) {
      uint o = tid + a * WORKGROUP;
      if (o >= ROWS * HEAD_DIM) break;
      uint row = o / HEAD_DIM, c = o % HEAD_DIM;
      float sum = OUTPUT(a, o) * row_alpha[row];
      for (uint kk = 0; kk < KEY_TILE; ++kk) sum += p_tile[row * KEY_TILE + kk] * kv_tile[kk * STRIDE + c];
      OUTPUT(a, o) = sum;
    }
    barrier();
  }

  for (uint a = 0; a < ACCUMULATORS; ++a) {
    uint o = tid + a * WORKGROUP;
    if (o >= ROWS * HEAD_DIM) break;
    uint row = o / HEAD_DIM, c = o % HEAD_DIM;
    if (row_key_limit[row] > 0u)
      partial_output[(row_output[row] * pc.n_splits + split) * HEAD_DIM + c] = OUTPUT(a, o);
  }
  for (uint row = tid; row < ROWS; row += WORKGROUP)
    if (row_key_limit[row] > 0u) partial_stats[row_output[row] * pc.n_splits + split] = vec2(row_max[row], row_sum[row]);
}
