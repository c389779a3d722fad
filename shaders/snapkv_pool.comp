#version 460
// SnapKV step 3: average pooling of each row's scores over `pool` neighbouring
// candidates, zero padded and always divided by `pool` (PyTorch's avg_pool1d
// with count_include_pad), so clusters of attended keys rank together.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(local_size_x = 128) in;

layout(std430, binding = 0) readonly buffer Scores { float scores[]; };   // [G, row_stride]
layout(std430, binding = 1) writeonly buffer Pooled { float pooled[]; };  // [G, row_stride]

layout(push_constant) uniform WindowPush { WINDOW_FIELDS } pc;

void main() {
  const uint g = gl_WorkGroupID.y, j = gl_GlobalInvocationID.x;
  if (j >= pc.n_candidates) return;
  const int half_width = int(pc.pool / 2u);
  float sum = 0.0;
  for (int u = -half_width; u <= half_width; ++u) {
    const int at = int(j) + u;
    if (at >= 0 && at < int(pc.n_candidates)) sum += scores[g * pc.row_stride + uint(at)];
  }
  pooled[g * pc.row_stride + j] = sum / float(pc.pool);
}
