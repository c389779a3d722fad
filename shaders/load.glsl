// Loads of fp16 / bf16 / fp32 tensors bound as uvec4 arrays: 16-byte loads,
// unpacked in registers, so no 16-bit storage feature is needed. Expects the
// specialization constant ELEMENT_TYPE.

// The eight elements in two raw words: 16-bit types fill `a`, fp32 both.
void unpack8(uvec4 a, uvec4 b, out vec4 lo, out vec4 hi) {
  if (ELEMENT_TYPE == ELEMENT_F32) {
    lo = uintBitsToFloat(a);
    hi = uintBitsToFloat(b);
  } else if (ELEMENT_TYPE == ELEMENT_F16) {
    lo = vec4(unpackHalf2x16(a.x), unpackHalf2x16(a.y));
    hi = vec4(unpackHalf2x16(a.z), unpackHalf2x16(a.w));
  } else {
    lo = uintBitsToFloat(uvec4(a.x << 16, a.x & 0xffff0000u, a.y << 16, a.y & 0xffff0000u));
    hi = uintBitsToFloat(uvec4(a.z << 16, a.z & 0xffff0000u, a.w << 16, a.w & 0xffff0000u));
  }
}

// Defines `void NAME_raw(uint e, out uvec4 a, out uvec4 b)`: the raw words of
// the eight elements at element index e (a multiple of 8), for unpack8 later,
// which keeps loads in flight in half the registers; and `void NAME(uint e,
// out vec4 lo, out vec4 hi)`: the same elements unpacked.
#define DEFINE_LOAD8(NAME, ARRAY)                                          \
  void NAME##_raw(uint e, out uvec4 a, out uvec4 b) {                      \
    if (ELEMENT_TYPE == ELEMENT_F32) {                                     \
      a = ARRAY[e / 4u];                                                   \
      b = ARRAY[e / 4u + 1u];                                              \
    } else {                                                               \
      a = ARRAY[e / 8u];                                                   \
      b = uvec4(0);                                                        \
    }                                                                      \
  }                                                                        \
  void NAME(uint e, out vec4 lo, out vec4 hi) {                            \
    uvec4 a, b;                                                            \
    NAME##_raw(e, a, b);                                                   \
    unpack8(a, b, lo, hi);                                                 \
  }

// Element e of a tensor, from the 32-bit word that holds it (word e for fp32,
// word e / 2 for fp16 and bf16).
float element_in_word(uint word, uint e) {
  if (ELEMENT_TYPE == ELEMENT_F32) return uintBitsToFloat(word);
  if (ELEMENT_TYPE == ELEMENT_F16) return unpackHalf2x16(word)[e & 1u];
  return uintBitsToFloat((e & 1u) != 0u ? word & 0xffff0000u : word << 16);
}

// Two elements in their storage type, for metadata derived from keys (Quest's
// page bounds): one word for fp16 / bf16 (x in the low half), two for fp32.
// Exact for values the type holds, as the max and min of stored keys are.
const uint PAIR_WORDS = ELEMENT_TYPE == ELEMENT_F32 ? 2u : 1u;

uvec2 pack_pair(vec2 v) {
  if (ELEMENT_TYPE == ELEMENT_F32) return floatBitsToUint(v);
  if (ELEMENT_TYPE == ELEMENT_F16) return uvec2(packHalf2x16(v), 0u);
  return uvec2((floatBitsToUint(v.x) >> 16) | (floatBitsToUint(v.y) & 0xffff0000u), 0u);
}

vec2 unpack_pair(uvec2 w) {
  if (ELEMENT_TYPE == ELEMENT_F32) return uintBitsToFloat(w);
  if (ELEMENT_TYPE == ELEMENT_F16) return unpackHalf2x16(w.x);
  return uintBitsToFloat(uvec2(w.x << 16, w.x & 0xffff0000u));
}
