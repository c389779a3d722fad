#version 460
// A linear layer for one token (a decode step): y[r] (+)= sum_k W[r, k] x[k]
// (+ bias[r]). A workgroup takes ROWS rows, 32 invocations a row walking its
// channel pairs side by side (one coalesced load of the row a step), their
// partial sums added in shared memory: a decode step reads every weight once,
// so it needs many rows in flight and whole lines of each.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint ELEMENT_TYPE = ELEMENT_F16;  // the weights'
const uint LANES = 32, ROWS = 8;
layout(local_size_x = 256) in;  // LANES * ROWS

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Weights { uint weights[]; };  // [n_out, n_in]
layout(std430, binding = 1) readonly buffer Input { float x[]; };         // [n_in], or head-major [heads, 1, d]
layout(std430, binding = 2) buffer Output { float y[]; };                 // [n_out]
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };       // [n_out], read when has_bias

layout(push_constant) uniform ModelMatmulPush { MODEL_MATMUL_FIELDS } pc;

shared float partial[ROWS][LANES];

void main() {
  const uint lane = gl_LocalInvocationIndex % LANES, slot = gl_LocalInvocationIndex / LANES;
  const uint r = gl_WorkGroupID.x * ROWS + slot;
  float sum = 0.0;
  if (r < pc.n_out) {
    // With one token a head-major input is row-major: [heads, 1, d] is [heads * d].
    for (uint k = 2u * lane; k < pc.n_in; k += 2u * LANES) {
      const uint e = r * pc.n_in + k;
      vec2 w;
      if (ELEMENT_TYPE == ELEMENT_F32) {
        w = uintBitsToFloat(uvec2(weights[e], weights[e + 1u]));
      } else {
        const uint word = weights[e / 2u];
        w = vec2(element_in_word(word, e), element_in_word(word, e + 1u));
      }
      sum += dot(w, vec2(x[k], x[k + 1u]));
    }
  }
  partial[slot][lane] = sum;
  barrier();
  for (uint half_width = LANES / 2u; half_width > 0u; half_width /= 2u) {
    if (lane < half_width) partial[slot][lane] += partial[slot][lane + half_width];
    barrier();
  }
  if (lane == 0u && r < pc.n_out) {
    float value = partial[slot][0] + (pc.has_bias != 0u ? bias[r] : 0.0);
    if (pc.accumulate != 0u) value += y[r];
    y[r] = value;
  }
}
