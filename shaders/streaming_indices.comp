#version 460
// StreamingLLM: the first n_sink candidates and the most recent budget - n_sink.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(local_size_x = 128) in;

layout(std430, binding = 0) writeonly buffer Indices { int indices[]; };  // [n_rows, budget]

layout(push_constant) uniform StreamingPush { STREAMING_FIELDS } pc;

void main() {
  const uint row = gl_WorkGroupID.x, sinks = min(pc.n_sink, pc.budget);
  for (uint s = gl_LocalInvocationIndex; s < pc.budget; s += 128u) {
    int token;
    if (pc.n_candidates <= pc.budget) token = s < pc.n_candidates ? int(s) : -1;
    else token = s < sinks ? int(s) : int(pc.n_candidates - pc.budget + s);
    indices[row * pc.budget + s] = token;
  }
}
