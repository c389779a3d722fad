#version 460
// LessIsMore, step 4: row 0 holds the m unified keys (step 3's top-k, ascending,
// all before the window); the window's keys follow them, and every other KV
// head's row is a copy: all heads attend one set.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(local_size_x = 128) in;

layout(push_constant) uniform LessIsMoreFinishPush { LESSISMORE_FINISH_FIELDS } pc;

layout(std430, binding = 0) buffer Lists { int lists[]; };  // [n_rows, width]

void main() {
  const uint e = gl_GlobalInvocationID.x;
  if (e >= pc.n_rows * pc.width) return;
  const uint row = e / pc.width, column = e % pc.width;
  if (row == 0u && column < pc.n_ranked) return;  // the unified keys, read by the other rows
  int position = -1;
  if (column < pc.n_ranked) position = lists[column];
  else if (column < pc.n_ranked + pc.n_window) position = int(pc.first_window + column - pc.n_ranked);
  lists[e] = position;
}
