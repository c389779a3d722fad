#version 460
// A matrix of ggml blocks widened to fp16, for a prefill chunk's linear
// layers: their tensor-core kernels take 16-bit tiles, and a chunk of
// hundreds of tokens reads each weight hundreds of times, so widening a
// matrix once a chunk (into one scratch the layers share) costs a few
// percent of the product (docs/perf.md), where a decode step's products read
// the blocks themselves (model_matvec.comp). Eight values an invocation.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint BLOCK_TYPE = 12u;  // ggml_blocks.glsl's
layout(local_size_x = 256) in;

#include "ggml_blocks.glsl"

layout(std430, binding = 0) readonly buffer Blocks { uint blocks[]; };
layout(std430, binding = 1) writeonly buffer Widened { uvec4 widened[]; };  // fp16, eight values a piece

layout(push_constant) uniform ModelDequantizePush { MODEL_DEQUANTIZE_FIELDS } pc;

DEFINE_BLOCK_LOAD8(block_load, blocks, BLOCK_TYPE)

void main() {
  const uint stride = gl_NumWorkGroups.x * 256u;
  for (uint piece = gl_GlobalInvocationID.x; piece < pc.pieces; piece += stride) {
    vec4 lo, hi;
    block_load(8u * piece, lo, hi);
    widened[piece] = uvec4(packHalf2x16(lo.xy), packHalf2x16(lo.zw), packHalf2x16(hi.xy), packHalf2x16(hi.zw));
  }
}
