#version 460
// The model runner's first step: each token's row of the embedding, widened to fp32.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint ELEMENT_TYPE = ELEMENT_F16;  // the embedding's
layout(local_size_x = 256) in;

#include "load.glsl"

layout(std430, binding = 0) readonly buffer Embedding { uint embedding[]; };  // [vocab, hidden], storage type
layout(std430, binding = 1) readonly buffer Tokens { int tokens[]; };        // [first_token + n_tokens]
layout(std430, binding = 2) writeonly buffer Hidden { float x[]; };          // [n_tokens, hidden]

layout(push_constant) uniform ModelEmbedPush { MODEL_EMBED_FIELDS } pc;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= pc.n_tokens * pc.hidden) return;
  const uint e = uint(tokens[pc.first_token + i / pc.hidden]) * pc.hidden + i % pc.hidden;
  x[i] = element_in_word(embedding[ELEMENT_TYPE == ELEMENT_F32 ? e : e / 2u], e);
}
