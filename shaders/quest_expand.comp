#version 460
// Quest selection as tokens: the kept pages' tokens (pages ascending) followed
// by the last page's, the page holding the last candidate, which Quest always
// keeps; or every candidate when they fit the budget. Ascending, -1 padded.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(local_size_x = 128) in;

layout(std430, binding = 0) readonly buffer KeptPages { int kept_pages[]; };  // [rows, pages_stride]
layout(std430, binding = 1) writeonly buffer Indices { int indices[]; };      // [rows, budget]

layout(push_constant) uniform QuestExpandPush { QUEST_EXPAND_FIELDS } pc;

shared uint kept_count;

void main() {
  const uint row = gl_WorkGroupID.x, tid = gl_LocalInvocationIndex;
  // The kept pages come first, then -1s: counting the non-negative entries in
  // parallel finds the first -1 without a serial walk of dependent loads.
  if (tid == 0u) kept_count = 0u;
  barrier();
  for (uint p = tid; p < pc.pages_stride; p += 128u)
    if (kept_pages[row * pc.pages_stride + p] >= 0) atomicAdd(kept_count, 1u);
  barrier();
  const uint last = pc.n_candidates - 1u, last_page_first = (last / pc.page_size) * pc.page_size;
  const uint from_pages = kept_count * pc.page_size;
  for (uint s = tid; s < pc.budget; s += 128u) {
    int token = -1;
    if (pc.n_candidates <= pc.budget) {
      token = s < pc.n_candidates ? int(s) : -1;
    } else if (s < from_pages) {
      token = kept_pages[row * pc.pages_stride + s / pc.page_size] * int(pc.page_size) + int(s % pc.page_size);
    } else if (last_page_first + (s - from_pages) <= last) {
      token = int(last_page_first + s - from_pages);
    }
    indices[row * pc.budget + s] = token;
  }
}
