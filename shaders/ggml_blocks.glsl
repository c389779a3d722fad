// ggml's block-quantized weights (engine/formats/ggml_blocks.h; llama.cpp's
// ggml-common.h is the fact), read straight from a tensor's blocks bound as
// 32-bit words: a block's bytes are not word-aligned in general (Q4_0's 18,
// Q6_K's 210), so fields are cut from the words that hold them, which needs
// no 8- or 16-bit storage feature. Eight neighbouring values at a time: a
// multiple of 8 never crosses a block (32 or 256 values), and in every type
// the eight share their scales and come from eight neighbouring bytes.
// Type numbers are ggml's; GGML_PLAIN marks a matrix in the storage type.

#define GGML_PLAIN 0xffffffffu
#define GGML_Q4_0 2u
#define GGML_Q4_1 3u
#define GGML_Q5_0 6u
#define GGML_Q5_1 7u
#define GGML_Q8_0 8u
#define GGML_Q2_K 10u
#define GGML_Q3_K 11u
#define GGML_Q4_K 12u
#define GGML_Q5_K 13u
#define GGML_Q6_K 14u

uint ggml_block_values(uint type) { return type >= GGML_Q2_K ? 256u : 32u; }

uint ggml_block_bytes(uint type) {
  switch (type) {
    case GGML_Q4_0: return 18u;
    case GGML_Q4_1: return 20u;
    case GGML_Q5_0: return 22u;
    case GGML_Q5_1: return 24u;
    case GGML_Q8_0: return 34u;
    case GGML_Q2_K: return 84u;
    case GGML_Q3_K: return 110u;
    case GGML_Q4_K: return 144u;
    case GGML_Q5_K: return 176u;
    default: return 210u;  // Q6_K
  }
}

// Byte i of a 32-bit word, and 4-bit / 2-bit / 1-bit fields of the four bytes.
uint byte_of(uint word, uint i) { return bitfieldExtract(word, int(8u * i), 8); }
// The four bytes' fields (word >> shift) & mask, as a uvec4.
uvec4 fields4(uint word, uint shift, uint mask) {
  return uvec4(word >> shift, word >> (shift + 8u), word >> (shift + 16u), word >> (shift + 24u)) & mask;
}
// Bit `bit` of each of the four bytes.
uvec4 bits4(uint word, uint bit) { return fields4(word, bit, 1u); }

// Defines, for the words array WORDS holding blocks of type TYPE (a
// specialization constant, so each type's branch is its own code):
//   float NAME_half(uint o)       the fp16 at byte o (even)
//   uint  NAME_word(uint o)       the four bytes from byte o (any alignment)
//   void  NAME(uint e, out vec4 lo, out vec4 hi)
//                                 values e .. e + 7 of the tensor (e % 8 == 0)
// Each value's arithmetic follows ggml's order ((d * scale) * q - d_min * m)
// so that the float64 tests' bound stays a rounding or two.
#define DEFINE_BLOCK_LOAD8(NAME, WORDS, TYPE)                                                     \
  float NAME##_half(uint o) { return unpackHalf2x16(WORDS[o >> 2u] >> (8u * (o & 2u))).x; }      \
  uint NAME##_word(uint o) {                                                                      \
    /* blocks of whole words (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K) are read at word offsets only */       \
    if (ggml_block_bytes(TYPE) % 4u == 0u) return WORDS[o >> 2u];                                 \
    const uint shift = 8u * (o & 3u), first = WORDS[o >> 2u];                                     \
    return shift == 0u ? first : (first >> shift) | (WORDS[(o >> 2u) + 1u] << (32u - shift));     \
  }                                                                                               \
  void NAME(uint e, out vec4 lo, out vec4 hi) {                                                   \
    const uint per_block = ggml_block_values(TYPE);                                               \
    const uint base = (e / per_block) * ggml_block_bytes(TYPE), j = e % per_block;                \
    if (TYPE == GGML_Q8_0) {                                                                      \
      const float d = NAME##_half(base);                                                          \
      const uint w0 = NAME##_word(base + 2u + j), w1 = NAME##_word(base + 6u + j);               \
      lo = vec4(bitfieldExtract(int(w0), 0, 8), bitfieldExtract(int(w0), 8, 8),                  \
                bitfieldExtract(int(w0), 16, 8), bitfieldExtract(int(w0), 24, 8)) * d;           \
      hi = vec4(bitfieldExtract(int(w1), 0, 8), bitfieldExtract(int(w1), 8, 8),                  \
                bitfieldExtract(int(w1), 16, 8), bitfieldExtract(int(w1), 24, 8)) * d;           \
    } else if (TYPE == GGML_Q4_0 || TYPE == GGML_Q4_1 || TYPE == GGML_Q5_0 || TYPE == GGML_Q5_1) { \
      /* 16 bytes of nibbles: values j < 16 in the low halves of bytes j.., the rest high */     \
      const bool with_min = TYPE == GGML_Q4_1 || TYPE == GGML_Q5_1;                              \
      const bool fifth_bit = TYPE == GGML_Q5_0 || TYPE == GGML_Q5_1;                             \
      const uint qs = base + (with_min ? 4u : 2u) + (fifth_bit ? 4u : 0u);                        \
      const uint shift = j < 16u ? 0u : 4u, at = qs + (j % 16u);                                  \
      uvec4 q0 = fields4(NAME##_word(at), shift, 15u), q1 = fields4(NAME##_word(at + 4u), shift, 15u); \
      if (fifth_bit) {                                                                            \
        const uint qh = NAME##_word(base + (with_min ? 4u : 2u));                                 \
        q0 |= uvec4(bitfieldExtract(qh, int(j), 1), bitfieldExtract(qh, int(j + 1u), 1),         \
                    bitfieldExtract(qh, int(j + 2u), 1), bitfieldExtract(qh, int(j + 3u), 1)) << 4u; \
        q1 |= uvec4(bitfieldExtract(qh, int(j + 4u), 1), bitfieldExtract(qh, int(j + 5u), 1),    \
                    bitfieldExtract(qh, int(j + 6u), 1), bitfieldExtract(qh, int(j + 7u), 1)) << 4u; \
      }                                                                                           \
      const float d = NAME##_half(base);                                                          \
      if (with_min) {                                                                             \
        const float m = NAME##_half(base + 2u);                                                   \
        lo = vec4(q0) * d + m;                                                                    \
        hi = vec4(q1) * d + m;                                                                    \
      } else {                                                                                    \
        const float offset = fifth_bit ? 16.0 : 8.0;                                              \
        lo = (vec4(q0) - offset) * d;                                                             \
        hi = (vec4(q1) - offset) * d;                                                             \
      }                                                                                           \
    } else if (TYPE == GGML_Q2_K || TYPE == GGML_Q3_K) {                                          \
      /* 128-value halves of 32-byte quants, four 2-bit planes a half, 16 values a scale */       \
      const uint half_ = j / 128u, plane = (j % 128u) / 32u, l = j % 32u;                         \
      const uint is = half_ * 8u + plane * 2u + l / 16u;                                          \
      const uint quants = base + (TYPE == GGML_Q2_K ? 16u : 32u) + half_ * 32u + l;               \
      const uvec4 q0 = fields4(NAME##_word(quants), 2u * plane, 3u);                              \
      const uvec4 q1 = fields4(NAME##_word(quants + 4u), 2u * plane, 3u);                         \
      if (TYPE == GGML_Q2_K) {                                                                    \
        const uint sc = byte_of(NAME##_word(base + (is & ~3u)), is & 3u);                         \
        const float dl = NAME##_half(base + 80u) * float(sc & 15u);                               \
        const float ml = NAME##_half(base + 82u) * float(sc >> 4u);                               \
        lo = dl * vec4(q0) - ml;                                                                  \
        hi = dl * vec4(q1) - ml;                                                                  \
      } else {                                                                                    \
        /* a 6-bit scale: its low 4 bits in bytes 0-7, its high 2 in bytes 8-11 */                \
        const uint low = byte_of(NAME##_word(base + 96u + (is % 8u & ~3u)), is % 4u) >> (is < 8u ? 0u : 4u); \
        const uint high = byte_of(NAME##_word(base + 104u), is % 4u) >> (2u * (is / 4u));         \
        const float dl = NAME##_half(base + 108u) * float(int((low & 15u) | ((high & 3u) << 4u)) - 32); \
        const uint bit = half_ * 4u + plane;                                                      \
        /* a value's third bit clear takes 4 off its two low bits */                             \
        const vec4 v0 = vec4(q0) - 4.0 * vec4(uvec4(1u) - bits4(NAME##_word(base + l), bit));     \
        const vec4 v1 = vec4(q1) - 4.0 * vec4(uvec4(1u) - bits4(NAME##_word(base + l + 4u), bit)); \
        lo = dl * v0;                                                                             \
        hi = dl * v1;                                                                             \
      }                                                                                           \
    } else if (TYPE == GGML_Q4_K || TYPE == GGML_Q5_K) {                                          \
      /* eight 32-value sub-blocks; sub-blocks 2i and 2i + 1 share 32 bytes, low and high nibbles */ \
      const uint is = j / 32u, l = j % 32u;                                                       \
      const uint s0 = NAME##_word(base + 4u), s1 = NAME##_word(base + 8u), s2 = NAME##_word(base + 12u); \
      uint sc, m;                                                                                 \
      if (is < 4u) {                                                                              \
        sc = byte_of(s0, is) & 63u;                                                               \
        m = byte_of(s1, is) & 63u;                                                                \
      } else {                                                                                    \
        sc = (byte_of(s2, is - 4u) & 15u) | ((byte_of(s0, is - 4u) >> 6u) << 4u);                 \
        m = (byte_of(s2, is - 4u) >> 4u) | ((byte_of(s1, is - 4u) >> 6u) << 4u);                  \
      }                                                                                           \
      const float d1 = NAME##_half(base) * float(sc), m1 = NAME##_half(base + 2u) * float(m);     \
      const uint quants = base + (TYPE == GGML_Q4_K ? 16u : 48u) + (is / 2u) * 32u + l;           \
      const uint shift = (is % 2u) * 4u;                                                          \
      uvec4 q0 = fields4(NAME##_word(quants), shift, 15u), q1 = fields4(NAME##_word(quants + 4u), shift, 15u); \
      if (TYPE == GGML_Q5_K) {                                                                    \
        q0 |= bits4(NAME##_word(base + 16u + l), is) << 4u;                                       \
        q1 |= bits4(NAME##_word(base + 20u + l), is) << 4u;                                       \
      }                                                                                           \
      lo = d1 * vec4(q0) - m1;                                                                    \
      hi = d1 * vec4(q1) - m1;                                                                    \
    } else { /* Q6_K: 128-value halves; four quarters of 32 values a half */                      \
      const uint half_ = j / 128u, quarter = (j % 128u) / 32u, l = j % 32u;                       \
      const uint low_at = base + half_ * 64u + (quarter % 2u) * 32u + l;                          \
      const uint high_at = base + 128u + half_ * 32u + l;                                         \
      const uint nibble = quarter < 2u ? 0u : 4u;                                                 \
      const uvec4 q0 = fields4(NAME##_word(low_at), nibble, 15u) | (fields4(NAME##_word(high_at), 2u * quarter, 3u) << 4u); \
      const uvec4 q1 = fields4(NAME##_word(low_at + 4u), nibble, 15u) |                           \
                       (fields4(NAME##_word(high_at + 4u), 2u * quarter, 3u) << 4u);              \
      const uint is = half_ * 8u + l / 16u + 2u * quarter;                                        \
      const int sc = bitfieldExtract(int(NAME##_word(base + 192u + (is & ~3u))), int(8u * (is & 3u)), 8); \
      const float dl = NAME##_half(base + 208u) * float(sc);                                      \
      lo = dl * (vec4(q0) - 32.0);                                                                \
      hi = dl * (vec4(q1) - 32.0);                                                                \
    }                                                                                             \
  }
