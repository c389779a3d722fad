// Constants shared by the GLSL kernels.
#ifndef KVSCOPE_COMMON_GLSL
#define KVSCOPE_COMMON_GLSL

// Stands in for -infinity (masked scores, empty rows): exp2 of it is 0 and
// LOWEST_FLOAT - LOWEST_FLOAT is 0, where -inf - -inf would be NaN.
const float LOWEST_FLOAT = -3.402823466e38;

// The high part of an fp32 value split as hi + lo for fp16 products: x with its
// low 13 mantissa bits cleared, exact in fp16 within fp16's normal range, so
// that lo = x - hi is exact in fp32 and fp16(lo) keeps about 22 bits of x in
// all. Done on the bits: on the H100, hi taken as unpackHalf2x16(packHalf2x16(x))
// gave scores no better than fp16(x) alone, as if the round trip were folded
// to x and lo were zero (docs/perf-experiments.md).
vec4 fp16_high_part(vec4 x) { return uintBitsToFloat(floatBitsToUint(x) & 0xffffe000u); }

// Eight values as fp16 in one 16-byte word, a then b: one piece of a
// tensor-core operand staged in shared memory.
uvec4 pack8(vec4 a, vec4 b) {
  return uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(b.xy), packHalf2x16(b.zw));
}

// This workgroup's tiles [x, y) of `tiles` shared among the dispatch's
// workgroups along x, as evenly as integer division makes it (the long rows'
// top-k slices, engine/kernels/topk.cpp).
uvec2 workgroup_tiles(uint tiles) {
  return uvec2(gl_WorkGroupID.x * tiles / gl_NumWorkGroups.x, (gl_WorkGroupID.x + 1u) * tiles / gl_NumWorkGroups.x);
}
#endif
