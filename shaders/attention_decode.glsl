// The body of attention_decode_partial.comp and sparse_attention_decode_partial.comp:
// one query per head (decode) over one split of a key list, for up to HEADS
// query heads that share the list (GQA). Written for memory-level parallelism,
// which is what a single query's attention is bound by: in the score phase each
// invocation owns a key and issues all of the key's 16-byte loads before using
// any; in the value phase invocations own 8 channels of one key and unroll four
// keys' loads. Scores of a pass of PASS_KEYS keys sit in shared memory, so the
// softmax is one max and one sum per pass, not a serial step per key tile.
// Writes the same partial outputs and (max, sum) in log2 units as
// attention_tile.glsl, for attention_merge. KEY_LIST: 0 = keys [0, position], 1 = a
// selection plus own keys.
layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(constant_id = 2) const uint HEADS = 4;        // query heads per workgroup, at most
layout(constant_id = 3) const uint PASS_KEYS = 512;  // key slots scored per pass
layout(local_size_x = 128) in;
const uint WORKGROUP = 128u;

#include "common.glsl"
#include "load.glsl"

layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };   // [H, 1, d]
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };         // [G, T, d]
layout(std430, binding = 2) readonly buffer Values { uvec4 values_[]; };    // [G, T, d]
layout(std430, binding = 3) writeonly buffer PartialOutput { float partial_output[]; };  // [H, 1, n_splits, d]
layout(std430, binding = 4) writeonly buffer PartialStats { vec2 partial_stats[]; };     // [H, 1, n_splits]
#if KEY_LIST
layout(std430, binding = 5) readonly buffer Selection { int selection[]; };  // [lists, list_length], -1 padded
#endif

layout(push_constant) uniform AttentionPartialPush { ATTENTION_PARTIAL_FIELDS } pc;

DEFINE_LOAD8(load_query, queries)
DEFINE_LOAD8(load_key, keys)
DEFINE_LOAD8(load_value, values_)

const uint CHUNKS = HEAD_DIM / 8u;        // 16-byte pieces of a row
const uint GROUPS = WORKGROUP / CHUNKS;   // keys in flight side by side in the value phase

shared float query_tile[HEADS * HEAD_DIM];
shared float p_tile[HEADS * PASS_KEYS];
shared int tile_keys[PASS_KEYS];
shared float reduce_tile[HEADS * WORKGROUP];
shared float sum_tile[512u * HEADS];  // (GROUPS / 2) x HEADS x HEAD_DIM, and GROUPS x HEAD_DIM <= 1024

int slot_key(uint list, uint slot) {
#if KEY_LIST
  if (slot < pc.list_length) return selection[list * pc.list_length + slot];
  uint own = slot - pc.list_length;
  return own < pc.own_count ? int(pc.own_first + own) : -1;
#else
  return int(slot);
#endif
}

// Per head, the workgroup's max (or sum) of `value[h]`; every invocation gets it.
void reduce_heads(inout float value[HEADS], bool take_max) {
  const uint tid = gl_LocalInvocationIndex;
  for (uint h = 0u; h < HEADS; ++h) reduce_tile[h * WORKGROUP + tid] = value[h];
  barrier();
  for (uint width = WORKGROUP / 2u; width > 0u; width /= 2u) {
    if (tid < width)
      for (uint h = 0u; h < HEADS; ++h) {
        float a = reduce_tile[h * WORKGROUP + tid], b = reduce_tile[h * WORKGROUP + tid + width];
        reduce_tile[h * WORKGROUP + tid] = take_max ? max(a, b) : a + b;
      }
    barrier();
  }
  for (uint h = 0u; h < HEADS; ++h) value[h] = reduce_tile[h * WORKGROUP];
  barrier();
}

void main() {
  const uint tid = gl_LocalInvocationIndex, split = gl_WorkGroupID.x;
  const uint list = gl_WorkGroupID.z / pc.head_blocks, block = gl_WorkGroupID.z % pc.head_blocks;
  const uint kv_head = list * pc.heads_per_list / (pc.n_heads / pc.n_kv_heads);
  const uint first_head = list * pc.heads_per_list + block * pc.heads_per_block;
  const uint heads = min(pc.heads_per_block, pc.heads_per_list - block * pc.heads_per_block);
  const uint key_limit = pc.first_position + 1u;  // causal: keys [0, position]

  for (uint i = tid; i < HEADS * CHUNKS; i += WORKGROUP) {
    uint h = i / CHUNKS, chunk = i % CHUNKS;
    vec4 lo = vec4(0), hi = vec4(0);
    if (h < heads) load_query((first_head + h) * HEAD_DIM + chunk * 8u, lo, hi);
    for (uint c = 0u; c < 4u; ++c) {
      query_tile[h * HEAD_DIM + chunk * 8u + c] = lo[c] * pc.scale_log2;
      query_tile[h * HEAD_DIM + chunk * 8u + 4u + c] = hi[c] * pc.scale_log2;
    }
  }

#if KEY_LIST
  const uint slots = pc.list_length + pc.own_count;
#else
  const uint slots = key_limit;
#endif
  const uint slot_begin = split * pc.split_keys;
  const uint slot_end = min(slot_begin + pc.split_keys, slots);

  // Value-phase layout: this invocation's 8 channels and its key group.
  const uint chunk = tid % CHUNKS, group = tid / CHUNKS;
  float running_max[HEADS], running_sum[HEADS];
  vec4 acc_lo[HEADS], acc_hi[HEADS];
  for (uint h = 0u; h < HEADS; ++h) {
    running_max[h] = LOWEST_FLOAT;
    running_sum[h] = 0.0;
    acc_lo[h] = vec4(0);
    acc_hi[h] = vec4(0);
  }

  for (uint pass0 = slot_begin; pass0 < slot_end; pass0 += PASS_KEYS) {
    const uint n = min(PASS_KEYS, slot_end - pass0);
    barrier();  // the query tile is in; the previous pass's readers are done

    float pass_max[HEADS];
    for (uint h = 0u; h < HEADS; ++h) pass_max[h] = LOWEST_FLOAT;
    for (uint kk = tid; kk < n; kk += WORKGROUP) {
      int key = slot_key(list, pass0 + kk);
      if (key >= 0 && uint(key) >= key_limit) key = -1;
      tile_keys[kk] = key;
      float score[HEADS];
      for (uint h = 0u; h < HEADS; ++h) score[h] = 0.0;
      if (key >= 0) {
        const uint row = (kv_head * pc.n_tokens + uint(key)) * HEAD_DIM;
        for (uint part = 0u; part < CHUNKS; part += 16u) {
          vec4 lo[16], hi[16];
          for (uint c = 0u; c < 16u; ++c)
            if (part + c < CHUNKS) load_key(row + (part + c) * 8u, lo[c], hi[c]);
          for (uint c = 0u; c < 16u; ++c) {
            if (part + c >= CHUNKS) break;
            const uint q = (part + c) * 8u;
            for (uint h = 0u; h < HEADS; ++h)
              score[h] += dot(lo[c], vec4(query_tile[h * HEAD_DIM + q], query_tile[h * HEAD_DIM + q + 1u],
                                          query_tile[h * HEAD_DIM + q + 2u], query_tile[h * HEAD_DIM + q + 3u])) +
                          dot(hi[c], vec4(query_tile[h * HEAD_DIM + q + 4u], query_tile[h * HEAD_DIM + q + 5u],
                                          query_tile[h * HEAD_DIM + q + 6u], query_tile[h * HEAD_DIM + q + 7u]));
          }
        }
      }
      for (uint h = 0u; h < HEADS; ++h) {
        p_tile[h * PASS_KEYS + kk] = score[h];
        if (key >= 0) pass_max[h] = max(pass_max[h], score[h]);
      }
    }
    reduce_heads(pass_max, true);  // its barriers also publish p_tile and tile_keys

    float alpha[HEADS], pass_sum[HEADS];
    for (uint h = 0u; h < HEADS; ++h) {
      const float new_max = max(running_max[h], pass_max[h]);
      alpha[h] = new_max == LOWEST_FLOAT ? 1.0 : exp2(running_max[h] - new_max);  // 0 when the old max is -inf
      running_max[h] = new_max;
      pass_sum[h] = 0.0;
    }
    for (uint kk = tid; kk < n; kk += WORKGROUP) {
      const bool valid = tile_keys[kk] >= 0;
      for (uint h = 0u; h < HEADS; ++h) {
        const float p = valid ? exp2(p_tile[h * PASS_KEYS + kk] - running_max[h]) : 0.0;
        p_tile[h * PASS_KEYS + kk] = p;
        pass_sum[h] += p;
      }
    }
    reduce_heads(pass_sum, false);
    for (uint h = 0u; h < HEADS; ++h) {
      running_sum[h] = running_sum[h] * alpha[h] + pass_sum[h];
      acc_lo[h] *= alpha[h];
      acc_hi[h] *= alpha[h];
    }

    if (group < GROUPS) {
      for (uint kk0 = group; kk0 < n; kk0 += 4u * GROUPS) {
        vec4 lo[4], hi[4];
        int key[4];
        for (uint u = 0u; u < 4u; ++u) {
          const uint kk = kk0 + u * GROUPS;
          key[u] = kk < n ? tile_keys[kk] : -1;
          lo[u] = vec4(0);
          hi[u] = vec4(0);
          if (key[u] >= 0) load_value((kv_head * pc.n_tokens + uint(key[u])) * HEAD_DIM + chunk * 8u, lo[u], hi[u]);
        }
        for (uint u = 0u; u < 4u; ++u) {
          if (key[u] < 0) continue;
          for (uint h = 0u; h < HEADS; ++h) {
            const float p = p_tile[h * PASS_KEYS + kk0 + u * GROUPS];
            acc_lo[h] += p * lo[u];
            acc_hi[h] += p * hi[u];
          }
        }
      }
    }
  }

  // Sum the key groups' accumulators: halve the live_groups groups until one is left.
  uint live_groups = GROUPS;
  while (live_groups > 1u) {
    const uint half_count = live_groups / 2u, upper = live_groups - half_count;  // groups [upper, live_groups) hand over
    barrier();
    if (group >= upper && group < live_groups)
      for (uint h = 0u; h < HEADS; ++h)
        for (uint c = 0u; c < 4u; ++c) {
          sum_tile[((group - upper) * HEADS + h) * HEAD_DIM + chunk * 8u + c] = acc_lo[h][c];
          sum_tile[((group - upper) * HEADS + h) * HEAD_DIM + chunk * 8u + 4u + c] = acc_hi[h][c];
        }
    barrier();
    if (group < half_count)
      for (uint h = 0u; h < HEADS; ++h)
        for (uint c = 0u; c < 4u; ++c) {
          acc_lo[h][c] += sum_tile[(group * HEADS + h) * HEAD_DIM + chunk * 8u + c];
          acc_hi[h][c] += sum_tile[(group * HEADS + h) * HEAD_DIM + chunk * 8u + 4u + c];
        }
    live_groups = upper;
  }
  if (group == 0u)
    for (uint h = 0u; h < heads; ++h) {
      const uint base = ((first_head + h) * pc.n_splits + split) * HEAD_DIM + chunk * 8u;
      for (uint c = 0u; c < 4u; ++c) {
        partial_output[base + c] = acc_lo[h][c];
        partial_output[base + 4u + c] = acc_hi[h][c];
      }
    }
  if (tid < heads) partial_stats[(first_head + tid) * pc.n_splits + split] = vec2(running_max[tid], running_sum[tid]);
}
