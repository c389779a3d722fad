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

// --- A part of a block a lane: the decode step's stream (model_matvec.comp) ---
// A lane takes part `part` of a block: 32 values of Q4_K and Q5_K (8 lanes a
// block), 16 of the others (16 lanes a 256-value block, 2 a 32-value one).
// Each type lays its parts out so that a lane reads whole neighbouring bytes
// and decodes the scales of two sub-blocks at most once: runs of 4 values
// (ggml_part_runs: their offsets in the block), run r's value = q[r] *
// scale[r / 4][r % 4] + shift[r / 4][r % 4]. The quants come out as exact
// small floats without an int-to-float conversion: set into the mantissa of
// 2^23 and 2^23 taken off (conversions run at a quarter of the FMA rate on
// NVIDIA's GPUs, and were what bound the 8-values-a-lane form).
uint ggml_part_values(uint type) { return type == GGML_Q4_K || type == GGML_Q5_K ? 32u : 16u; }
uint ggml_parts(uint type) { return ggml_block_values(type) / ggml_part_values(type); }

// Runs 0-3 and 4-7 (where a part has them) of part `part`.
void ggml_part_runs(uint type, uint part, out uvec4 first, out uvec4 second) {
  second = uvec4(0u);
  if (type == GGML_Q4_0 || type == GGML_Q4_1 || type == GGML_Q5_0 || type == GGML_Q5_1) {
    first = uvec4(0u, 4u, 16u, 20u) + 8u * part;  // low nibbles, then high
  } else if (type == GGML_Q4_K || type == GGML_Q5_K) {  // sub-blocks 2g (low nibbles) and 2g + 1 (high)
    first = uvec4(0u, 4u, 8u, 12u) + 64u * (part / 2u) + 16u * (part % 2u);
    second = first + 32u;
  } else if (type == GGML_Q6_K) {  // quarters a (low nibbles) and a + 2 (high)
    first = uvec4(0u, 4u, 64u, 68u) + 128u * (part / 8u) + 32u * ((part % 8u) / 4u) + 8u * (part % 4u);
  } else {
    first = uvec4(0u, 4u, 8u, 12u) + 16u * part;  // Q8_0, and the rest through the 8-value load
  }
}

// The fields (word >> (shift + 8 i)) & mask of the four bytes, less `offset`.
vec4 float_fields4(uint word, uint shift, uint mask, float offset) {
  return uintBitsToFloat(fields4(word, shift, mask) | 0x4B000000u) - (8388608.0 + offset);
}
// The same with a fifth bit: bit `bit` + i of `high` as 16.
vec4 float_fields4_bit(uint word, uint shift, uint high, uint bit, float offset) {
  const uvec4 fifth = (uvec4(high) >> (uvec4(0u, 1u, 2u, 3u) + bit)) & 1u;
  return uintBitsToFloat(fields4(word, shift, 15u) | (fifth << 4u) | 0x4B000000u) - (8388608.0 + offset);
}
// The low (or high) nibbles of a word's four bytes, less `offset`, in fewer
// integer operations (half the FP32 rate on an H100): each nibble is masked
// where it lies, bytes 2 and 3 after one shift, so it sits in the mantissa
// as q * 2^k, and one multiply-add by 2^-k takes 2^23 off exactly.
vec4 nibbles4(uint word, bool high, float offset) {
  const uint upper = word >> 16u, mask = high ? 0xF0u : 0x0Fu;
  const vec4 unit = high ? vec4(1.0 / 16.0, 1.0 / 4096.0, 1.0 / 16.0, 1.0 / 4096.0) : vec4(1.0, 1.0 / 256.0, 1.0, 1.0 / 256.0);
  const uvec4 bits = uvec4(word & mask, word & (mask << 8u), upper & mask, upper & (mask << 8u)) | 0x4B000000u;
  return fma(uintBitsToFloat(bits), unit, -(8388608.0 * unit + offset));
}

// Defines, after DEFINE_BLOCK_LOAD8(NAME, WORDS, TYPE), with QUADS and PAIRS
// the same buffer seen as uvec4s and uvec2s:
//   void NAME##_part(uint block, uint part, out vec4 q[8], out vec4 scale[2], out vec4 shift[2])
// part `part` of block `block` of the tensor (runs past the part's left unset).
#define DEFINE_BLOCK_LOAD16(NAME, WORDS, QUADS, PAIRS, TYPE)                                                    \
  void NAME##_part(uint block, uint part, out vec4 q[8], out vec4 scale[2], out vec4 shift[2]) {     \
    const uint base = block * ggml_block_bytes(TYPE);                                             \
    shift[0] = shift[1] = scale[1] = vec4(0.0);                                                   \
    if (TYPE == GGML_Q8_0) {                                                                      \
      const uint at = base + 2u + 16u * part;                                                     \
      q[0] = float_fields4(NAME##_word(at) ^ 0x80808080u, 0u, 255u, 128.0);                       \
      q[1] = float_fields4(NAME##_word(at + 4u) ^ 0x80808080u, 0u, 255u, 128.0);                  \
      q[2] = float_fields4(NAME##_word(at + 8u) ^ 0x80808080u, 0u, 255u, 128.0);                  \
      q[3] = float_fields4(NAME##_word(at + 12u) ^ 0x80808080u, 0u, 255u, 128.0);                 \
      scale[0] = vec4(NAME##_half(base));                                                         \
    } else if (TYPE == GGML_Q4_0 || TYPE == GGML_Q4_1 || TYPE == GGML_Q5_0 || TYPE == GGML_Q5_1) { \
      const bool with_min = TYPE == GGML_Q4_1 || TYPE == GGML_Q5_1;                              \
      const bool fifth_bit = TYPE == GGML_Q5_0 || TYPE == GGML_Q5_1;                             \
      const uint header = with_min ? 4u : 2u, at = base + header + (fifth_bit ? 4u : 0u) + 8u * part; \
      const uint w0 = NAME##_word(at), w1 = NAME##_word(at + 4u);                                 \
      const float offset = with_min ? 0.0 : fifth_bit ? 16.0 : 8.0;                               \
      if (fifth_bit) {                                                                            \
        const uint qh = NAME##_word(base + header);                                               \
        q[0] = float_fields4_bit(w0, 0u, qh, 8u * part, offset);                                  \
        q[1] = float_fields4_bit(w1, 0u, qh, 8u * part + 4u, offset);                             \
        q[2] = float_fields4_bit(w0, 4u, qh, 16u + 8u * part, offset);                            \
        q[3] = float_fields4_bit(w1, 4u, qh, 20u + 8u * part, offset);                            \
      } else {                                                                                    \
        q[0] = nibbles4(w0, false, offset);                                                       \
        q[1] = nibbles4(w1, false, offset);                                                       \
        q[2] = nibbles4(w0, true, offset);                                                        \
        q[3] = nibbles4(w1, true, offset);                                                        \
      }                                                                                           \
      scale[0] = vec4(NAME##_half(base));                                                         \
      if (with_min) shift[0] = vec4(NAME##_half(base + 2u));                                      \
    } else if (TYPE == GGML_Q4_K || TYPE == GGML_Q5_K) {                                          \
      /* sub-blocks 2g and 2g + 1: the low and high nibbles of 16 bytes of the g-th 32 */         \
      const uint g = part / 2u, l = 16u * (part % 2u);                                            \
      /* d and dmin, then twelve bytes of 6-bit scales and minima: one 16-byte read (blocks of */ \
      /* 144 and 176 bytes start on 16); the two sub-blocks' bytes decoded side by side */        \
      const uvec4 header = QUADS[base / 16u];                                                     \
      const vec2 dm = unpackHalf2x16(header.x);                                                   \
      const uint at16 = 16u * (g & 1u);                                                           \
      uint sc, m;                                                                                 \
      if (g < 2u) {                                                                               \
        sc = (header.y >> at16) & 0x3F3Fu;                                                        \
        m = (header.z >> at16) & 0x3F3Fu;                                                         \
      } else {                                                                                    \
        const uint low = header.w >> at16;                                                        \
        sc = (low & 0x0F0Fu) | (((header.y >> at16) & 0xC0C0u) >> 2u);                           \
        m = ((low >> 4u) & 0x0F0Fu) | (((header.z >> at16) & 0xC0C0u) >> 2u);                    \
      }                                                                                           \
      const vec2 d1 = dm.x * (uintBitsToFloat(uvec2(sc & 0xFFu, sc >> 8u) | 0x4B000000u) - 8388608.0); \
      const vec2 m1 = dm.y * (uintBitsToFloat(uvec2(m & 0xFFu, m >> 8u) | 0x4B000000u) - 8388608.0);   \
      scale[0] = vec4(d1.x);                                                                      \
      scale[1] = vec4(d1.y);                                                                      \
      shift[0] = vec4(-m1.x);                                                                     \
      shift[1] = vec4(-m1.y);                                                                     \
      const uvec4 w = QUADS[(base + (TYPE == GGML_Q4_K ? 16u : 48u) + 32u * g + l) / 16u];        \
      const uvec4 high = TYPE == GGML_Q5_K ? QUADS[(base + 16u + l) / 16u] : uvec4(0u);           \
      for (uint i = 0u; i < 4u; ++i) {                                                            \
        q[i] = nibbles4(w[i], false, 0.0);                                                        \
        q[4u + i] = nibbles4(w[i], true, 0.0);                                                    \
        if (TYPE == GGML_Q5_K) {                                                                  \
          q[i] += 16.0 * vec4(bits4(high[i], 2u * g));                                            \
          q[4u + i] += 16.0 * vec4(bits4(high[i], 2u * g + 1u));                                  \
        }                                                                                         \
      }                                                                                           \
    } else if (TYPE == GGML_Q6_K) {                                                               \
      /* half h; quarters a and a + 2 share the low bytes (low and high nibbles) and the high ones */ \
      const uint h = part / 8u, a = (part % 8u) / 4u, l = 8u * (part % 4u);                       \
      const uint low_at = base + 64u * h + 32u * a + l, high_at = base + 128u + 32u * h + l;      \
      const uint w0 = NAME##_word(low_at), w1 = NAME##_word(low_at + 4u);                         \
      const uint h0 = NAME##_word(high_at), h1 = NAME##_word(high_at + 4u);                       \
      q[0] = uintBitsToFloat(fields4(w0, 0u, 15u) | (fields4(h0, 2u * a, 3u) << 4u) | 0x4B000000u) - 8388640.0; \
      q[1] = uintBitsToFloat(fields4(w1, 0u, 15u) | (fields4(h1, 2u * a, 3u) << 4u) | 0x4B000000u) - 8388640.0; \
      q[2] = uintBitsToFloat(fields4(w0, 4u, 15u) | (fields4(h0, 2u * a + 4u, 3u) << 4u) | 0x4B000000u) - 8388640.0; \
      q[3] = uintBitsToFloat(fields4(w1, 4u, 15u) | (fields4(h1, 2u * a + 4u, 3u) << 4u) | 0x4B000000u) - 8388640.0; \
      /* int8 scales of sub-blocks 8h + l / 16 + 2a and that + 4 */                               \
      const uint is = 8u * h + l / 16u + 2u * a;                                                  \
      const float s_low = float(bitfieldExtract(int(NAME##_word(base + 192u + (is & ~3u))), int(8u * (is & 3u)), 8)); \
      const float s_high = float(bitfieldExtract(int(NAME##_word(base + 196u + (is & ~3u))), int(8u * (is & 3u)), 8)); \
      scale[0] = NAME##_half(base + 208u) * vec4(s_low, s_low, s_high, s_high);                   \
    } else { /* the 8-value load, twice */                                                        \
      const uint e = block * ggml_block_values(TYPE) + 16u * part;                                \
      NAME(e, q[0], q[1]);                                                                        \
      NAME(e + 8u, q[2], q[3]);                                                                   \
      scale[0] = vec4(1.0);                                                                       \
    }                                                                                             \
  }

// Whether a type's runs have a shift (a block minimum) besides a scale.
bool ggml_has_shift(uint type) {
  return type == GGML_Q4_1 || type == GGML_Q5_1 || type == GGML_Q4_K || type == GGML_Q5_K;
}
