#version 460
// The model runner's first step: each token's row of the embedding, widened
// to fp32, from the storage type or from ggml blocks (a quantized file's
// table stays in its blocks: the lookup reads a row's few).
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint ELEMENT_TYPE = ELEMENT_F16;  // the embedding's
layout(constant_id = 1) const uint BLOCK_TYPE = 0xffffffffu;  // ggml_blocks.glsl's, or GGML_PLAIN
layout(local_size_x = 256) in;

#include "load.glsl"
#include "ggml_blocks.glsl"

layout(std430, binding = 0) readonly buffer Embedding { uint embedding[]; };  // [vocab, hidden], storage type
layout(std430, binding = 1) readonly buffer Tokens { int tokens[]; };        // [first_token + n_tokens]
layout(std430, binding = 2) writeonly buffer Hidden { float x[]; };          // [n_tokens, hidden]

layout(push_constant) uniform ModelEmbedPush { MODEL_EMBED_FIELDS } pc;

DEFINE_BLOCK_LOAD8(block_load, embedding, BLOCK_TYPE)

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= pc.n_tokens * pc.hidden) return;
  const uint e = uint(tokens[pc.first_token + i / pc.hidden]) * pc.hidden + i % pc.hidden;
  if (BLOCK_TYPE == GGML_PLAIN) {
    x[i] = element_in_word(embedding[ELEMENT_TYPE == ELEMENT_F32 ? e : e / 2u], e);
  } else {  // each of the eight neighbours decodes their shared piece: a row is a few kB, from cache
    vec4 lo, hi;
    block_load(e & ~7u, lo, hi);
    x[i] = (e & 4u) == 0u ? lo[e & 3u] : hi[e & 3u];
  }
}
