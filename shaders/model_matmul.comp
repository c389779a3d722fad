#version 460
// A linear layer: y[t, r] (+)= sum_k W[r, k] x[t, k] (+ bias[r]), W [n_out, n_in]
// in the storage type, x and y fp32. A workgroup takes TILE_ROWS rows by
// TILE_TOKENS tokens, an invocation one output, its whole sum: no barrier and
// no shared memory (on lavapipe a shared-memory reduction of partial sums
// cost more than the products). Neighbouring invocations take neighbouring
// rows, so a token's inputs are read once for all of them.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint ELEMENT_TYPE = ELEMENT_F16;  // the weights'
layout(constant_id = 1) const uint TILE_ROWS = 64;
layout(constant_id = 2) const uint TILE_TOKENS = 1;
layout(local_size_x_id = 3) in;  // TILE_ROWS * TILE_TOKENS

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Weights { uint weights[]; };  // [n_out, n_in]
layout(std430, binding = 1) readonly buffer Input { float x[]; };         // [n_tokens, n_in], or head-major
layout(std430, binding = 2) buffer Output { float y[]; };                 // [n_tokens, n_out]
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };       // [n_out], read when has_bias

layout(push_constant) uniform ModelMatmulPush { MODEL_MATMUL_FIELDS } pc;

// Input channels k and k + 1 of token t.
vec2 input_pair(uint t, uint k) {
  if (pc.input_head_dim == 0u) return vec2(x[t * pc.n_in + k], x[t * pc.n_in + k + 1u]);
  // k is even and d a multiple of 8, so k + 1 lies in k's head.
  const uint d = pc.input_head_dim, at = ((k / d) * pc.n_tokens + t) * d + k % d;
  return vec2(x[at], x[at + 1u]);
}

// Weights (r, k) and (r, k + 1).
vec2 weight_pair(uint r, uint k) {
  const uint e = r * pc.n_in + k;
  if (ELEMENT_TYPE == ELEMENT_F32) return uintBitsToFloat(uvec2(weights[e], weights[e + 1u]));
  const uint word = weights[e / 2u];
  return vec2(element_in_word(word, e), element_in_word(word, e + 1u));
}

void main() {
  const uint lane = gl_LocalInvocationIndex;
  const uint r = gl_WorkGroupID.x * TILE_ROWS + lane % TILE_ROWS, t = gl_WorkGroupID.y * TILE_TOKENS + lane / TILE_ROWS;
  if (r >= pc.n_out || t >= pc.n_tokens) return;
  float sum = 0.0;
  for (uint k = 0u; k < pc.n_in; k += 2u) sum += dot(weight_pair(r, k), input_pair(t, k));
  const uint at = t * pc.n_out + r;
  if (pc.has_bias != 0u) sum += bias[r];
  if (pc.accumulate != 0u) sum += y[at];
  y[at] = sum;
}
