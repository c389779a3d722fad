#version 460
// Loki, once per cache: every key projected onto its KV head's principal
// components, K~[g, c, j] = u_{g,c} . k_j, so that scoring reads rank floats
// per key instead of d values.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 128) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Keys { uvec4 keys[]; };          // [G, T, d]
layout(std430, binding = 1) readonly buffer Basis { float basis[]; };        // [G, rank, d]
layout(std430, binding = 2) writeonly buffer Projected { float projected[]; };  // LOKI_PROJECTED_AT

layout(push_constant) uniform LokiPush { LOKI_FIELDS } pc;

DEFINE_LOAD8(load_key, keys)

shared float basis_tile[LOKI_MAX_BASIS];

void main() {
  const uint g = gl_WorkGroupID.y, j = gl_GlobalInvocationID.x;
  for (uint e = gl_LocalInvocationIndex; e < pc.rank * HEAD_DIM; e += 128u) basis_tile[e] = basis[g * pc.rank * HEAD_DIM + e];
  barrier();
  if (j >= pc.n_tokens) return;
  for (uint c = 0u; c < pc.rank; ++c) {
    float sum = 0.0;
    for (uint chunk = 0u; chunk < HEAD_DIM / 8u; ++chunk) {
      vec4 lo, hi;
      load_key((g * pc.n_tokens + j) * HEAD_DIM + chunk * 8u, lo, hi);
      for (uint x = 0u; x < 4u; ++x)
        sum += basis_tile[c * HEAD_DIM + chunk * 8u + x] * lo[x] + basis_tile[c * HEAD_DIM + chunk * 8u + 4u + x] * hi[x];
    }
    projected[LOKI_PROJECTED_AT(g, c, j, pc.rank, pc.n_tokens)] = sum;
  }
}
