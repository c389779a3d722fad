#version 460
// Reads a whole buffer once with 16-byte loads (grid-stride) and folds it into
// one word per workgroup, so the loads cannot be optimised away: the device's
// attainable read bandwidth, against which `kvscope bench` rates each stage.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Source { uvec4 source[]; };
layout(std430, binding = 1) writeonly buffer Folded { uint folded[]; };

layout(push_constant) uniform StreamReadPush { STREAM_READ_FIELDS } pc;

shared uint partial[256];

void main() {
  uvec4 acc = uvec4(0);
  for (uint i = gl_GlobalInvocationID.x; i < pc.n_vectors; i += gl_NumWorkGroups.x * 256u) acc ^= source[i];
  partial[gl_LocalInvocationIndex] = acc.x ^ acc.y ^ acc.z ^ acc.w;
  barrier();
  if (gl_LocalInvocationIndex == 0u) {
    uint word = 0u;
    for (uint t = 0u; t < 256u; ++t) word ^= partial[t];
    folded[gl_WorkGroupID.x] = word;
  }
}
