#version 460
// Greedy sampling: the first index of the largest logit (NaN counts as the
// least), one workgroup.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

const uint WORKGROUP = 256;
layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Logits { float logits[]; };  // [n]
layout(std430, binding = 1) writeonly buffer Chosen { int chosen[]; };   // [capacity]

layout(push_constant) uniform ModelArgmaxPush { MODEL_ARGMAX_FIELDS } pc;

const float NEGATIVE_INFINITY = -3.402823466e38;  // the least float: below every logit
shared float best_value[WORKGROUP];
shared uint best_index[WORKGROUP];

bool better(float value, uint index, float than_value, uint than_index) {
  return value > than_value || (value == than_value && index < than_index);
}

void main() {
  const uint lane = gl_LocalInvocationIndex;
  float value = NEGATIVE_INFINITY;
  uint index = 0xffffffffu;
  for (uint i = lane; i < pc.n; i += WORKGROUP) {
    const float v = isnan(logits[i]) ? NEGATIVE_INFINITY : logits[i];
    if (index == 0xffffffffu || v > value) value = v, index = i;
  }
  best_value[lane] = value;
  best_index[lane] = index;
  barrier();
  for (uint half_width = WORKGROUP / 2u; half_width > 0u; half_width /= 2u) {
    if (lane < half_width && best_index[lane + half_width] != 0xffffffffu &&
        (best_index[lane] == 0xffffffffu ||
         better(best_value[lane + half_width], best_index[lane + half_width], best_value[lane], best_index[lane]))) {
      best_value[lane] = best_value[lane + half_width];
      best_index[lane] = best_index[lane + half_width];
    }
    barrier();
  }
  if (lane == 0u) chosen[pc.slot] = int(best_index[0]);
}
