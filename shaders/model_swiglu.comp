#version 460
// SwiGLU's gate: h[i] = silu(gate[i]) * up[i], two elements an invocation, h
// in fp32 or (half_output, a tensor-core linear layer's input) fp16.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Gate { vec2 gate[]; };
layout(std430, binding = 1) readonly buffer Up { vec2 up[]; };
layout(std430, binding = 2) writeonly buffer Hidden { vec2 h[]; };  // may be gate itself, in fp32
layout(std430, binding = 2) writeonly buffer HiddenHalf { uint h_half[]; };

layout(push_constant) uniform ModelSwigluPush { MODEL_SWIGLU_FIELDS } pc;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (2u * i >= pc.count) return;
  const vec2 g = gate[i], value = g / (1.0 + exp(-g)) * up[i];
  if (pc.half_output != 0u) h_half[i] = packHalf2x16(value);
  else h[i] = value;
}
