#version 460
// RoPE and the KV cache: rotates each token's projected q and k by its
// position's (cos, sin), writes q as the attention's queries [H, n_tokens, d]
// and k and v into the cache [G, capacity, d] at their positions, in the
// storage type. An invocation writes two neighbouring channels (one word of
// a 16-bit type) of one head of q, k or v.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint ELEMENT_TYPE = ELEMENT_F16;  // the cache's and queries'
layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer ProjectedQ { float q[]; };  // [n_tokens, H * d]
layout(std430, binding = 1) readonly buffer ProjectedK { float k[]; };  // [n_tokens, G * d]
layout(std430, binding = 2) readonly buffer ProjectedV { float v[]; };  // [n_tokens, G * d]
layout(std430, binding = 3) readonly buffer Rotations { vec2 rotation[]; };  // [positions, d / 2]: (cos, sin)
layout(std430, binding = 4) writeonly buffer Queries { uint queries[]; };     // [H, n_tokens, d]
layout(std430, binding = 5) writeonly buffer KeyCache { uint key_cache[]; };  // [G, capacity, d]
layout(std430, binding = 6) writeonly buffer ValueCache { uint value_cache[]; };
layout(std430, binding = 7) writeonly buffer KeptQueries { uint kept_queries[]; };  // [H, capacity, d]

layout(push_constant) uniform ModelRopePush { MODEL_ROPE_FIELDS } pc;

#include "model_rope.glsl"

void main() {
  const uint d = pc.head_dim, pairs = d / 2u, slots = pc.n_heads + 2u * pc.n_kv_heads;
  const bool interleaved = pc.interleaved != 0u;
  const uint i = gl_GlobalInvocationID.x;
  if (i >= pc.n_tokens * slots * pairs) return;
  const uint t = i / (slots * pairs), slot = (i / pairs) % slots, c = 2u * (i % pairs);
  const uint position = pc.first_position + t;
  if (slot < pc.n_heads) {
    const uint row = t * pc.n_heads * d + slot * d;
    const vec2 value = ROPE_ROTATED_PAIR(q, row, c, d, interleaved, position);
    const uint e = (slot * pc.n_tokens + t) * d + c;
    STORE_PAIR(queries, e, value)
    if (pc.keep_queries != 0u) {
      const uint kept = (slot * pc.capacity + position) * d + c;
      STORE_PAIR(kept_queries, kept, value)
    }
  } else if (slot < pc.n_heads + pc.n_kv_heads) {
    const uint g = slot - pc.n_heads, row = t * pc.n_kv_heads * d + g * d;
    const vec2 value = ROPE_ROTATED_PAIR(k, row, c, d, interleaved, position);
    const uint e = (g * pc.capacity + position) * d + c;
    STORE_PAIR(key_cache, e, value)
  } else {
    const uint g = slot - pc.n_heads - pc.n_kv_heads, row = t * pc.n_kv_heads * d + g * d;
    const vec2 value = vec2(v[row + c], v[row + c + 1u]);
    const uint e = (g * pc.capacity + position) * d + c;
    STORE_PAIR(value_cache, e, value)
  }
}
