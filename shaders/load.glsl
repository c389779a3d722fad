// Loads of fp16 / bf16 / fp32 tensors bound as uvec4 arrays: 16-byte loads,
// unpacked in registers, so no 16-bit storage feature is needed. Expects the
// specialization constant ELEMENT_TYPE.

// Defines `void NAME(uint e, out vec4 lo, out vec4 hi)`: the eight elements at
// element index e, a multiple of 8.
#define DEFINE_LOAD8(NAME, ARRAY)                                                        \
  void NAME(uint e, out vec4 lo, out vec4 hi) {                                          \
    if (ELEMENT_TYPE == ELEMENT_F32) {                                                   \
      lo = uintBitsToFloat(ARRAY[e / 4u]);                                               \
      hi = uintBitsToFloat(ARRAY[e / 4u + 1u]);                                          \
    } else {                                                                             \
      uvec4 w = ARRAY[e / 8u];                                                           \
      if (ELEMENT_TYPE == ELEMENT_F16) {                                                 \
        lo = vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));                             \
        hi = vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w));                             \
      } else {                                                                           \
        lo = uintBitsToFloat(uvec4(w.x << 16, w.x & 0xffff0000u, w.y << 16, w.y & 0xffff0000u)); \
        hi = uintBitsToFloat(uvec4(w.z << 16, w.z & 0xffff0000u, w.w << 16, w.w & 0xffff0000u)); \
      }                                                                                  \
    }                                                                                    \
  }
