#version 460
// SwiGLU's gate: gate[i] = silu(gate[i]) * up[i], in place.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(local_size_x = 256) in;

layout(std430, binding = 0) buffer Gate { float gate[]; };
layout(std430, binding = 1) readonly buffer Up { float up[]; };

layout(push_constant) uniform ModelSwigluPush { MODEL_SWIGLU_FIELDS } pc;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= pc.count) return;
  const float g = gate[i];
  gate[i] = g / (1.0 + exp(-g)) * up[i];
}
