#version 460
// Random weights drawn on the GPU, for timing a model at its real size
// without its weights: element i is a signed byte from a hash of (key, i),
// times 2^-12 (uniform over [-1/32, 1/32), standard deviation about 0.018),
// exact in fp32, fp16 and bf16, so that the host twin
// (engine/model/random_weights.cpp) matches it bit for bit. A grid-stride
// loop, so that any tensor fits one dispatch of a fixed size.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"
layout(constant_id = 0) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(local_size_x = 256) in;
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

// A value with at most 8 significant bits: its bf16 and fp16 bits are exact.
uint bf16_bits(float x) { return floatBitsToUint(x) >> 16; }

void main() {
  const uint stride = gl_NumWorkGroups.x * 256u;
  for (uint w = gl_GlobalInvocationID.x; w < pc.words; w += stride) {
    if (ELEMENT_TYPE == ELEMENT_F32) {
      words[w] = floatBitsToUint(value(w));
    } else if (ELEMENT_TYPE == ELEMENT_F16) {
      words[w] = packHalf2x16(vec2(value(2u * w), value(2u * w + 1u)));
    } else {
      words[w] = bf16_bits(value(2u * w)) | (bf16_bits(value(2u * w + 1u)) << 16);
    }
  }
}
