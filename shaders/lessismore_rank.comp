#version 460
// LessIsMore, step 2: a workgroup per query head sorts the head's m top keys
// (the top-k's ascending list) by score, highest first and ties toward the
// lower position, as torch.topk lists them. The paper flattens the heads'
// lists rank by rank, head by head, and keeps the first m distinct keys: a
// key's place there is its first (rank, head), so each key keeps the least
// rank * H + head over the heads, stored as 0x7F7FFFFF minus it: a positive
// float whose bits order as the place does in reverse, so that step 3's top-k
// of the largest takes the first m places. 0 (cleared by step 1) is a key no
// head ranked.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(local_size_x = 256) in;

layout(push_constant) uniform LessIsMoreRankPush { LESSISMORE_RANK_FIELDS } pc;

layout(std430, binding = 0) readonly buffer Scores { float scores[]; };  // [H, row_stride]
layout(std430, binding = 1) readonly buffer Lists { int lists[]; };      // [H, n_ranked], ascending positions
layout(std430, binding = 2) buffer Unified { uint unified[]; };          // [n_scored]

shared float sorted_score[LESSISMORE_MAX_RANKED];
shared uint sorted_position[LESSISMORE_MAX_RANKED];

// Whether entry a comes before entry b: the higher score, then the lower position.
bool before(uint a, uint b) {
  return sorted_score[a] > sorted_score[b] || (sorted_score[a] == sorted_score[b] && sorted_position[a] < sorted_position[b]);
}

void main() {
  const uint head = gl_WorkGroupID.x, tid = gl_LocalInvocationIndex;
  uint size = 1u;
  while (size < pc.n_ranked) size <<= 1;
  for (uint i = tid; i < size; i += 256u) {
    if (i < pc.n_ranked) {
      const uint position = uint(lists[head * pc.n_ranked + i]);
      sorted_position[i] = position;
      sorted_score[i] = scores[head * pc.row_stride + position];
    } else {  // padding, after every real entry
      sorted_position[i] = 0xFFFFFFFFu;
      sorted_score[i] = uintBitsToFloat(0xFF800000u);  // -inf
    }
  }
  barrier();
  // Bitonic sort into `before` order.
  for (uint k = 2u; k <= size; k <<= 1)
    for (uint j = k >> 1; j > 0u; j >>= 1) {
      for (uint i = tid; i < size; i += 256u) {
        const uint partner = i ^ j;
        if (partner > i) {
          const bool forward = (i & k) == 0u;
          if (forward ? before(partner, i) : before(i, partner)) {
            const float s = sorted_score[i];
            sorted_score[i] = sorted_score[partner];
            sorted_score[partner] = s;
            const uint p = sorted_position[i];
            sorted_position[i] = sorted_position[partner];
            sorted_position[partner] = p;
          }
        }
      }
      barrier();
    }
  for (uint rank = tid; rank < pc.n_ranked; rank += 256u)
    atomicMax(unified[sorted_position[rank]], 0x7F7FFFFFu - (rank * pc.n_heads + head));
}
