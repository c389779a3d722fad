#version 460
// Counts the iterations a loop of pc.outer x pc.inner steps really makes.
// Mesa's llvmpipe (lavapipe) ends every loop of an invocation once that
// invocation has closed LP_MAX_TGSI_LOOP_ITERATIONS loop iterations in all
// (gallivm's loop limiter): tests/test_loop_limit.cpp measures it, and the
// engine keeps each kernel's loops under it (vk::DeviceInfo::loop_limit).
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer Counts { uint counts[]; };
layout(push_constant) uniform LoopProbePush { LOOP_PROBE_FIELDS } pc;

void main() {
  uint count = 0u;
  for (uint i = 0u; i < pc.outer; ++i)
    for (uint j = 0u; j < pc.inner; ++j) count += counts[1u + (j & 1u)];
  counts[0] = count;
}
