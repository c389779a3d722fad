#version 460
// Random weights drawn on the GPU, for timing a model at its real size
// without its weights: element i is a signed byte from a hash of (key, i),
// times 2^-12 (uniform over [-1/32, 1/32), standard deviation about 0.018),
// exact in fp32, fp16 and bf16, so that the host twin
// (engine/model/random_weights.cpp) matches it bit for bit. A grid-stride
// loop, so that any tensor fits one dispatch of a fixed size.
// A matrix of ggml blocks (BLOCK_TYPE) is drawn a word at a time instead:
// word w is the hash of (key, w), with every byte of a block's fp16 scales
// (d, and d_min or m where the type has them) set to a fixed power of two,
// so that the values are finite and about the fp16 draw's size (the
// quants, sub-scales and high bits stay random). write_gguf.py draws the
// same blocks, the host twin is random_block_bytes.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"
layout(constant_id = 0) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(constant_id = 1) const uint BLOCK_TYPE = 0xffffffffu;  // ggml_blocks.glsl's, or GGML_PLAIN
layout(local_size_x = 256) in;

#include "ggml_blocks.glsl"
layout(std430, binding = 0) writeonly buffer Weights { uint words[]; };
layout(push_constant) uniform ModelRandomFillPush { MODEL_RANDOM_FILL_FIELDS } pc;

// A 32-bit integer hash (lowbias32: two multiply-xorshift rounds).
uint mix32(uint x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

float value(uint i) { return float(int(mix32(i ^ mix32(pc.key)) >> 24) - 128) * (1.0 / 4096.0); }

// The byte at offset o of a block that the type's scales fix, or 256 where
// none does: (offset of the first fp16 scale, of the second or none, and the
// fp16 bits they take).
uint scale_byte(uint o) {
  uvec3 field;  // first scale's offset, second's (or 999), their fp16 bits
  switch (BLOCK_TYPE) {
    case GGML_Q8_0: field = uvec3(0u, 999u, 0x0C00u); break;  // 2^-12
    case GGML_Q4_0: field = uvec3(0u, 999u, 0x1C00u); break;  // 2^-8
    case GGML_Q5_0: field = uvec3(0u, 999u, 0x1800u); break;  // 2^-9
    case GGML_Q2_K: field = uvec3(80u, 82u, 0x1400u); break;  // 2^-10
    case GGML_Q3_K: field = uvec3(108u, 999u, 0x0C00u); break;
    case GGML_Q6_K: field = uvec3(208u, 999u, 0x0400u); break;  // 2^-14
    case GGML_Q4_1: field = uvec3(0u, 2u, 0x1C00u); break;  // m: -2^-5 below
    case GGML_Q5_1: field = uvec3(0u, 2u, 0x1800u); break;
    default: field = uvec3(0u, 2u, 0x0400u); break;  // Q4_K, Q5_K: d and d_min 2^-14
  }
  const bool minimum = BLOCK_TYPE == GGML_Q4_1 || BLOCK_TYPE == GGML_Q5_1;
  if (o - field.x < 2u) return (field.z >> (8u * (o - field.x))) & 0xffu;
  if (o - field.y < 2u) return ((minimum ? 0xA800u : field.z) >> (8u * (o - field.y))) & 0xffu;
  return 256u;
}

// A value with at most 8 significant bits: its bf16 and fp16 bits are exact.
uint bf16_bits(float x) { return floatBitsToUint(x) >> 16; }

void main() {
  const uint stride = gl_NumWorkGroups.x * 256u;
  for (uint w = gl_GlobalInvocationID.x; w < pc.words; w += stride) {
    if (BLOCK_TYPE != GGML_PLAIN) {
      uint word = mix32(w ^ mix32(pc.key));
      for (uint b = 0u; b < 4u; ++b) {
        const uint bytes = ggml_block_bytes(BLOCK_TYPE);  // (4w + b) mod bytes, without 4w overflowing
        const uint fixed_byte = scale_byte((4u * (w % bytes) + b) % bytes);
        if (fixed_byte < 256u) word = bitfieldInsert(word, fixed_byte, int(8u * b), 8);
      }
      words[w] = word;
    } else if (ELEMENT_TYPE == ELEMENT_F32) {
      words[w] = floatBitsToUint(value(w));
    } else if (ELEMENT_TYPE == ELEMENT_F16) {
      words[w] = packHalf2x16(vec2(value(2u * w), value(2u * w + 1u)));
    } else {
      words[w] = bf16_bits(value(2u * w)) | (bf16_bits(value(2u * w + 1u)) << 16);
    }
  }
}
