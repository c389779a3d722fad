#version 460
// The end of a linear layer that model_matmul_matrix.comp ran in k_splits
// slices of its input channels: y[t, r] (+)= sum_z partials[z, t, r]
// (+ bias[r]), the slices added in order, so the sum does not depend on the
// device's scheduling.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Partials { float partials[]; };  // [k_splits, n_tokens, n_out]
layout(std430, binding = 1) buffer Output { float y[]; };                    // [n_tokens, n_out]
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };          // [n_out], read when has_bias

layout(push_constant) uniform ModelMatmulPush { MODEL_MATMUL_FIELDS } pc;

void main() {
  const uint count = pc.n_tokens * pc.n_out, at = gl_GlobalInvocationID.x;
  if (at >= count) return;
  float sum = 0.0;
  for (uint z = 0u; z < pc.k_splits; ++z) sum += partials[z * count + at];
  if (pc.has_bias != 0u) sum += bias[at % pc.n_out];
  if (pc.accumulate != 0u) sum += y[at];
  y[at] = sum;
}
