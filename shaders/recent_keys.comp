#version 460
// SnapKV and H2O keep the most recent candidates besides the scored ones: after
// the top-k wrote heavy_count ascending positions, append the recent ones (all
// later than any scored candidate, so the row stays ascending) and pad with -1.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(local_size_x = 128) in;

layout(std430, binding = 0) buffer Indices { int indices[]; };  // [n_rows, budget]

layout(push_constant) uniform RecentPush { RECENT_FIELDS } pc;

void main() {
  const uint row = gl_WorkGroupID.x;
  for (uint s = pc.heavy_count + gl_LocalInvocationIndex; s < pc.budget; s += 128u) {
    const uint recent = s - pc.heavy_count;
    indices[row * pc.budget + s] = recent < pc.recent ? int(pc.first_recent + recent) : -1;
  }
}
