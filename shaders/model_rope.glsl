// RoPE's rotation and the storage type's stores, shared by model_rope.comp
// (a chunk's q, k and v) and model_matvec.comp (a decode step's, rotated by
// the last workgroup to finish each head). Expects ELEMENT_TYPE (the cache's
// and queries' type) and the table `rotation` ([positions, d / 2] of (cos, sin)).

// Rounds to the storage type, to nearest even.
uint bf16_bits(float x) {
  const uint u = floatBitsToUint(x);
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

// Channels e and e + 1 of a tensor in the storage type.
#define STORE_PAIR(ARRAY, e, value)                                                     \
  if (ELEMENT_TYPE == ELEMENT_F32) {                                                    \
    ARRAY[(e)] = floatBitsToUint(value.x);                                              \
    ARRAY[(e) + 1u] = floatBitsToUint(value.y);                                         \
  } else if (ELEMENT_TYPE == ELEMENT_F16) {                                             \
    ARRAY[(e) / 2u] = packHalf2x16(value);                                              \
  } else {                                                                              \
    ARRAY[(e) / 2u] = bf16_bits(value.x) | (bf16_bits(value.y) << 16);                  \
  }

// The channel that channel c of a head of d turns with: c ^ 1 for interleaved
// pairs (2i, 2i + 1), else the other half's (i, i + d / 2).
uint rope_partner(uint c, uint d, bool interleaved) {
  return interleaved ? c ^ 1u : (c < d / 2u ? c + d / 2u : c - d / 2u);
}

// Channel c rotated by its pair's (cos, sin) in the table [positions, d / 2]
// at `position`, from its own value and its partner's: (x, y) -> (x cos - y
// sin, x sin + y cos) for the pair's first and second channel.
float rope_rotated(float own, float partner, uint c, uint d, bool interleaved, uint position) {
  const uint frequency = interleaved ? c / 2u : c % (d / 2u);
  const vec2 cs = rotation[position * (d / 2u) + frequency];
  const bool first = interleaved ? (c & 1u) == 0u : c < d / 2u;
  return first ? own * cs.x - partner * cs.y : own * cs.x + partner * cs.y;
}

// Channels c and c + 1 (c even) of the head whose fp32 channels start at
// ARRAY[row], rotated for `position`: the pair one invocation writes.
#define ROPE_ROTATED_PAIR(ARRAY, row, c, d, interleaved, position)                                              \
  vec2(rope_rotated(ARRAY[(row) + (c)], ARRAY[(row) + rope_partner((c), (d), (interleaved))], (c), (d),         \
                    (interleaved), (position)),                                                                 \
       rope_rotated(ARRAY[(row) + (c) + 1u], ARRAY[(row) + rope_partner((c) + 1u, (d), (interleaved))], (c) + 1u, \
                    (d), (interleaved), (position)))
