#version 460
// Quest metadata: for each KV head and page of page_size tokens, the channel-wise
// max M and min m of the keys. Built once per cache; an append recomputes only
// the pages it touched (first_page..end_page).
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 64) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Keys { uvec4 keys[]; };          // [G, T, d]
// [G, d, n_pages] pairs (max, min) in the keys' storage type (load.glsl's
// pack_pair), channel-major so that page_scores' invocations (one per page)
// read neighbouring words: half the bytes of fp32 bounds for fp16 keys, and
// exact, since a page's max and min are stored keys.
layout(std430, binding = 1) writeonly buffer PageMinMax { uint minmax[]; };

layout(push_constant) uniform PageMinMaxPush { PAGE_MINMAX_FIELDS } pc;

DEFINE_LOAD8(load_key, keys)

void main() {
  const uint page = pc.first_page + gl_WorkGroupID.x, kv_head = gl_WorkGroupID.y;
  if (page >= pc.end_page) return;
  const uint first = page * pc.page_size, end = min(first + pc.page_size, pc.n_valid);
  for (uint chunk = gl_LocalInvocationIndex; chunk < HEAD_DIM / 8u; chunk += 64u) {
    vec4 max_lo = vec4(-3.402823466e38), max_hi = max_lo, min_lo = vec4(3.402823466e38), min_hi = min_lo;
    for (uint j = first; j < end; ++j) {
      vec4 lo, hi;
      load_key((kv_head * pc.n_tokens + j) * HEAD_DIM + chunk * 8u, lo, hi);
      max_lo = max(max_lo, lo);
      max_hi = max(max_hi, hi);
      min_lo = min(min_lo, lo);
      min_hi = min(min_hi, hi);
    }
    for (uint c = 0u; c < 8u; ++c) {
      const uint at = ((kv_head * HEAD_DIM + chunk * 8u + c) * pc.n_pages + page) * PAIR_WORDS;
      const uvec2 words = pack_pair(c < 4u ? vec2(max_lo[c], min_lo[c]) : vec2(max_hi[c - 4u], min_hi[c - 4u]));
      minmax[at] = words.x;
      if (PAIR_WORDS == 2u) minmax[at + 1u] = words.y;
    }
  }
}
