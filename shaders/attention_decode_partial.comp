#version 460
// Dense attention of ONE query per head over one split of the keys [0, t]:
// the decode step. Unlike attention_partial (tiles through shared memory with a
// barrier per phase), every subgroup streams its own keys with no barrier:
// the lanes of a key group share a key's 16-byte chunks, dot products reduce by
// subgroup shuffles, and the online softmax lives in registers. The group's
// heads (up to MAX_HEADS) read each key once. Same partial outputs as
// attention_partial, so attention_merge combines the splits.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(constant_id = 2) const uint MAX_HEADS = 4;   // heads per workgroup
layout(constant_id = 3) const uint MAX_CHUNKS = 1;  // 8-channel chunks per lane: (d/8) / min(subgroup, d/8)
layout(constant_id = 4) const uint WORKGROUP = 128; // 4 subgroups
layout(local_size_x_id = 4) in;

#include "common.glsl"
#include "load.glsl"

layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };  // [H, 1, d]
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };        // [G, T, d]
layout(std430, binding = 2) readonly buffer Values { uvec4 values_[]; };   // [G, T, d]
layout(std430, binding = 3) writeonly buffer PartialOutput { float partial_output[]; };  // [H, n_splits, d]
layout(std430, binding = 4) writeonly buffer PartialStats { vec2 partial_stats[]; };     // [H, n_splits]

layout(push_constant) uniform AttentionPartialPush { ATTENTION_PARTIAL_FIELDS } pc;

DEFINE_LOAD8(load_query, queries)
DEFINE_LOAD8(load_key, keys)
DEFINE_LOAD8(load_value, values_)

const uint SUBGROUPS = 4;
shared float subgroup_max[SUBGROUPS * MAX_HEADS];
shared float subgroup_sum[SUBGROUPS * MAX_HEADS];
shared float subgroup_output[SUBGROUPS * MAX_HEADS * HEAD_DIM];

void main() {
  const uint split = gl_WorkGroupID.x;
  const uint kv_head = gl_WorkGroupID.z / pc.head_blocks, block = gl_WorkGroupID.z % pc.head_blocks;
  const uint group = pc.n_heads / pc.n_kv_heads;
  const uint first_head = kv_head * group + block * pc.heads_per_block;
  const uint n_heads = min(pc.heads_per_block, group - block * pc.heads_per_block);

  const uint chunks = HEAD_DIM / 8u;
  const uint lanes_per_key = min(gl_SubgroupSize, chunks);
  const uint chunks_per_lane = chunks / lanes_per_key;
  const uint keys_per_subgroup = gl_SubgroupSize / lanes_per_key;
  const uint lane_in_key = gl_SubgroupInvocationID % lanes_per_key;
  const uint key_in_subgroup = gl_SubgroupInvocationID / lanes_per_key;
  const uint subgroup = gl_SubgroupID;

  vec4 q[MAX_HEADS][MAX_CHUNKS][2];
  vec4 o[MAX_HEADS][MAX_CHUNKS][2];
  float m[MAX_HEADS], l[MAX_HEADS];
  for (uint h = 0u; h < MAX_HEADS; ++h) {
    m[h] = LOWEST_FLOAT;
    l[h] = 0.0;
    for (uint ci = 0u; ci < MAX_CHUNKS; ++ci) {
      vec4 lo = vec4(0), hi = vec4(0);
      if (h < n_heads && ci < chunks_per_lane)
        load_query((first_head + h) * HEAD_DIM + (lane_in_key + ci * lanes_per_key) * 8u, lo, hi);
      q[h][ci][0] = lo * pc.scale_log2;
      q[h][ci][1] = hi * pc.scale_log2;
      o[h][ci][0] = vec4(0);
      o[h][ci][1] = vec4(0);
    }
  }

  const uint key_end = min((split + 1u) * pc.split_keys, pc.first_position + 1u);
  const uint stride = gl_NumSubgroups * keys_per_subgroup;
  // `base` is uniform in the subgroup, so every lane takes part in every shuffle.
  for (uint base = split * pc.split_keys + subgroup * keys_per_subgroup; base < key_end; base += stride) {
    const uint key = base + key_in_subgroup;
    const bool valid = key < key_end;
    vec4 k[MAX_CHUNKS][2];
    for (uint ci = 0u; ci < MAX_CHUNKS; ++ci) {
      vec4 lo = vec4(0), hi = vec4(0);
      if (valid && ci < chunks_per_lane)
        load_key((kv_head * pc.n_tokens + key) * HEAD_DIM + (lane_in_key + ci * lanes_per_key) * 8u, lo, hi);
      k[ci][0] = lo;
      k[ci][1] = hi;
    }
    float score[MAX_HEADS];
    for (uint h = 0u; h < MAX_HEADS; ++h) {
      float s = 0.0;
      for (uint ci = 0u; ci < MAX_CHUNKS; ++ci) s += dot(q[h][ci][0], k[ci][0]) + dot(q[h][ci][1], k[ci][1]);
      for (uint offset = lanes_per_key / 2u; offset > 0u; offset /= 2u) s += subgroupShuffleXor(s, offset);
      score[h] = s;
    }
    vec4 v[MAX_CHUNKS][2];
    for (uint ci = 0u; ci < MAX_CHUNKS; ++ci) {
      vec4 lo = vec4(0), hi = vec4(0);
      if (valid && ci < chunks_per_lane)
        load_value((kv_head * pc.n_tokens + key) * HEAD_DIM + (lane_in_key + ci * lanes_per_key) * 8u, lo, hi);
      v[ci][0] = lo;
      v[ci][1] = hi;
    }
    if (!valid) continue;
    for (uint h = 0u; h < MAX_HEADS; ++h) {
      const float new_max = max(m[h], score[h]);
      const float alpha = exp2(m[h] - new_max), p = exp2(score[h] - new_max);
      l[h] = l[h] * alpha + p;
      m[h] = new_max;
      for (uint ci = 0u; ci < MAX_CHUNKS; ++ci) {
        o[h][ci][0] = o[h][ci][0] * alpha + p * v[ci][0];
        o[h][ci][1] = o[h][ci][1] * alpha + p * v[ci][1];
      }
    }
  }

  // Merge the key groups of this subgroup (lanes lanes_per_key apart hold the same channels).
  for (uint h = 0u; h < MAX_HEADS; ++h) {
    float group_max = m[h];
    for (uint offset = lanes_per_key; offset < gl_SubgroupSize; offset *= 2u)
      group_max = max(group_max, subgroupShuffleXor(group_max, offset));
    const float scale = m[h] == LOWEST_FLOAT ? 0.0 : exp2(m[h] - group_max);
    float sum = l[h] * scale;
    for (uint offset = lanes_per_key; offset < gl_SubgroupSize; offset *= 2u) sum += subgroupShuffleXor(sum, offset);
    for (uint ci = 0u; ci < MAX_CHUNKS; ++ci)
      for (uint half_ = 0u; half_ < 2u; ++half_) {
        vec4 acc = o[h][ci][half_] * scale;
        for (uint offset = lanes_per_key; offset < gl_SubgroupSize; offset *= 2u)
          acc += vec4(subgroupShuffleXor(acc.x, offset), subgroupShuffleXor(acc.y, offset),
                      subgroupShuffleXor(acc.z, offset), subgroupShuffleXor(acc.w, offset));
        if (key_in_subgroup == 0u && ci < chunks_per_lane) {
          const uint channel = (lane_in_key + ci * lanes_per_key) * 8u + half_ * 4u;
          for (uint c = 0u; c < 4u; ++c) subgroup_output[(subgroup * MAX_HEADS + h) * HEAD_DIM + channel + c] = acc[c];
        }
      }
    if (gl_SubgroupInvocationID == 0u) {
      subgroup_max[subgroup * MAX_HEADS + h] = group_max;
      subgroup_sum[subgroup * MAX_HEADS + h] = sum;
    }
  }
  barrier();

  // Merge the subgroups and write this split's (unnormalised output, max, sum) per head.
  for (uint i = gl_LocalInvocationIndex; i < n_heads * HEAD_DIM; i += WORKGROUP) {
    const uint h = i / HEAD_DIM, c = i % HEAD_DIM;
    float split_max = LOWEST_FLOAT;
    for (uint s = 0u; s < gl_NumSubgroups; ++s) split_max = max(split_max, subgroup_max[s * MAX_HEADS + h]);
    float out_value = 0.0, sum = 0.0;
    for (uint s = 0u; s < gl_NumSubgroups; ++s) {
      const float mx = subgroup_max[s * MAX_HEADS + h];
      const float w = mx == LOWEST_FLOAT ? 0.0 : exp2(mx - split_max);
      out_value += subgroup_output[(s * MAX_HEADS + h) * HEAD_DIM + c] * w;
      sum += subgroup_sum[s * MAX_HEADS + h] * w;
    }
    const uint row = first_head + h;  // n_queries = 1: the row is the head
    partial_output[(row * pc.n_splits + split) * HEAD_DIM + c] = out_value;
    if (c == 0u) partial_stats[row * pc.n_splits + split] = vec2(split_max, sum);
  }
}
