#version 460
// RMSNorm of each token's hidden state, in fp32: y = x / sqrt(mean(x^2) + eps) * w,
// written in fp32 or (half_output) fp16.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

const uint WORKGROUP = 256;
layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Hidden { float x[]; };    // [n_tokens, hidden]
layout(std430, binding = 1) readonly buffer Weight { float w[]; };    // [hidden]
layout(std430, binding = 2) writeonly buffer Normed { float y[]; };   // [n_tokens, hidden]
layout(std430, binding = 2) writeonly buffer NormedHalf { uint y_half[]; };  // the same in fp16 pairs

layout(push_constant) uniform ModelRmsNormPush { MODEL_RMSNORM_FIELDS } pc;

shared float sums[WORKGROUP];

void main() {
  // Rows past a dispatch's 65,535 workgroups a dimension (Qwen3's heads of a
  // long chunk) continue along y.
  const uint token = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x, lane = gl_LocalInvocationIndex;
  if (token >= pc.n_tokens) return;
  const uint row = (pc.first_token + token) * pc.hidden, out_row = token * pc.hidden;
  float s = 0.0;
  for (uint c = lane; c < pc.hidden; c += WORKGROUP) s += x[row + c] * x[row + c];
  sums[lane] = s;
  barrier();
  for (uint half_width = WORKGROUP / 2u; half_width > 0u; half_width /= 2u) {
    if (lane < half_width) sums[lane] += sums[lane + half_width];
    barrier();
  }
  const float inverse = inversesqrt(sums[0] / float(pc.hidden) + pc.eps);
  if (pc.half_output != 0u) {  // hidden is even
    for (uint c = 2u * lane; c < pc.hidden; c += 2u * WORKGROUP)
      y_half[(out_row + c) / 2u] = packHalf2x16(vec2(x[row + c], x[row + c + 1u]) * inverse * vec2(w[c], w[c + 1u]));
  } else {
    for (uint c = lane; c < pc.hidden; c += WORKGROUP) y[out_row + c] = x[row + c] * inverse * w[c];
  }
}
