// The body of model_matvec.comp (matrices in the storage type) and
// model_matvec_blocks.comp (MATVEC_READS_BLOCKS: ggml blocks too, read as
// they stream).
//
// A decode step's linear layers (one token; layouts.h's ModelMatvecPush):
// y[r] (+)= sum_k W[r, k] x[k] (+ bias[r]) for up to three matrices on one
// input in one dispatch (q, k and v), or two with SwiGLU's product as output
// (gate and up), the input's RMSNorm taken on the way. A decode step reads
// every weight once, so this kernel is a stream of the weights: 32
// invocations a row, each loading 16 bytes of the row at a time, so a row's
// step is one 512-byte coalesced read; a subgroup takes two rows at once
// (gate and up, or rows r and r + 8 / slices), loading each input piece once for both
// (docs/perf-experiments.md), with four pieces of weights in flight a lane.
// Fewer, larger dispatches matter here: each costs the GPU a drain and a
// start (microseconds) against a few microseconds of reading. The host cuts
// each row's input channels into `slices` (1, 2, 4 or 8), each its own
// subgroup of the workgroup, summed through shared memory at the end: more
// subgroups in flight, each a shorter chain of dependent reads (the 8B step
// at 32k on the H100: 8.20 ms/token in 1 slice, 7.79 in 2). Rows whose length
// is not a multiple of 8 (stories260K's 172-wide MLP) take the same walk over
// channel pairs. With `rope` (a decode step's q, k and v) the last workgroup
// to finish a head also rotates it into the queries or the cache: what
// model_rope.comp does in a dispatch of its own for a chunk.

layout(constant_id = 0) const uint ELEMENT_TYPE = ELEMENT_F16;  // the weights'
// RMSNorm's 1 / rms after the weights' stream (GPUs) or before it (CPUs:
// lavapipe runs a workgroup as coroutines that suspend at each barrier, and
// after the stream its sums would be kept across norm_scale's; the CPU keeps
// the form it had before the H100's tuning: ModelKernels, docs/perf.md).
layout(constant_id = 1) const bool NORM_AFTER_STREAM = true;
// Subgroups a row's input channels are cut into: 1, 2, 4 or 8. A constant, so
// that the stream's strides are too: as a push constant it cost lavapipe's
// linear layers 10-15% (docs/perf.md).
layout(constant_id = 2) const uint SLICES = 1u;
// Whether this dispatch takes RoPE: q, k and v (rows0..2, whole heads of
// head_dim) rotated and written to the queries and the cache too. A constant,
// so that the other products carry none of its barriers.
layout(constant_id = 3) const bool ROPE = false;
// Each matrix's ggml block type (ggml_blocks.glsl), or GGML_PLAIN: in the
// storage type. A quantized matrix's values are dequantized as they stream
// in, its blocks read once: what a decode step saves by them. A lane takes a
// part of a block (16 or 32 values) rather than 8: a block's scales are
// decoded once a part, which with the quants' unpacking is what bounds this
// stream (arithmetic, not bytes: docs/perf.md).
layout(constant_id = 4) const uint BLOCK_TYPE0 = 0xffffffffu;
layout(constant_id = 5) const uint BLOCK_TYPE1 = 0xffffffffu;
layout(constant_id = 6) const uint BLOCK_TYPE2 = 0xffffffffu;
// Whether a lane keeps several pieces of a row in flight (GPUs: what hides
// the memory's latency) or walks the row a piece at a time (CPUs: lavapipe
// vectorises across lanes anyway, and compiles a third of the code, which
// was most of the test suite's time there; docs/perf.md).
layout(constant_id = 7) const bool PIECES_IN_FLIGHT = true;
const uint LANES = 32, ROWS = 8, INVOCATIONS = 256;
layout(local_size_x = 256) in;  // LANES * ROWS

#include "load.glsl"
#include "ggml_blocks.glsl"

// Each weight buffer seen as 16-byte pieces, as words and as pairs of words.
layout(std430, binding = 0) readonly buffer Weights0 { uvec4 weights0[]; };  // [rows0, n_in]
layout(std430, binding = 0) readonly buffer WeightWords0 { uint words0[]; };
layout(std430, binding = 1) readonly buffer Weights1 { uvec4 weights1[]; };  // [rows1, n_in], or [rows0, n_in] gated
layout(std430, binding = 1) readonly buffer WeightWords1 { uint words1[]; };
layout(std430, binding = 2) readonly buffer Weights2 { uvec4 weights2[]; };  // [rows2, n_in]
layout(std430, binding = 2) readonly buffer WeightWords2 { uint words2[]; };
layout(std430, binding = 3) readonly buffer Input { vec4 x4[]; };            // [n_in], or head-major [heads, 1, d]
layout(std430, binding = 3) readonly buffer InputFloats { float x[]; };
// Coherent: with rope, a head's last workgroup reads what the others wrote.
layout(std430, binding = 4) coherent buffer Output0 { float y0[]; };
layout(std430, binding = 5) coherent buffer Output1 { float y1[]; };
layout(std430, binding = 6) coherent buffer Output2 { float y2[]; };
layout(std430, binding = 7) readonly buffer Bias0 { float bias0[]; };
layout(std430, binding = 8) readonly buffer Bias1 { float bias1[]; };
layout(std430, binding = 9) readonly buffer Bias2 { float bias2[]; };
layout(std430, binding = 10) readonly buffer NormWeight { vec4 norm4[]; };   // [n_in], read with norm
layout(std430, binding = 10) readonly buffer NormWeightFloats { float norm_weight[]; };
// With rope (model_rope.comp's outputs), and each head's rows finished so far.
layout(std430, binding = 11) readonly buffer Rotations { vec2 rotation[]; };     // [positions, d / 2]: (cos, sin)
layout(std430, binding = 12) writeonly buffer Queries { uint queries[]; };       // [H, 1, d]
layout(std430, binding = 13) writeonly buffer KeyCache { uint key_cache[]; };    // [G, capacity, d]
layout(std430, binding = 14) writeonly buffer ValueCache { uint value_cache[]; };
layout(std430, binding = 15) writeonly buffer KeptQueries { uint kept_queries[]; };  // [H, capacity, d]
layout(std430, binding = 16) coherent buffer HeadRows { uint head_rows[]; };         // [H + 2 G], zero between steps

#include "model_rope.glsl"

layout(push_constant) uniform ModelMatvecPush { MODEL_MATVEC_FIELDS } pc;

DEFINE_LOAD8(plain_load0, weights0)
DEFINE_LOAD8(plain_load1, weights1)
DEFINE_LOAD8(plain_load2, weights2)
#if MATVEC_READS_BLOCKS
layout(std430, binding = 0) readonly buffer WeightPairs0 { uvec2 pairs0[]; };
layout(std430, binding = 1) readonly buffer WeightPairs1 { uvec2 pairs1[]; };
layout(std430, binding = 2) readonly buffer WeightPairs2 { uvec2 pairs2[]; };
DEFINE_BLOCK_LOAD8(block_load0, words0, BLOCK_TYPE0)
DEFINE_BLOCK_LOAD8(block_load1, words1, BLOCK_TYPE1)
DEFINE_BLOCK_LOAD8(block_load2, words2, BLOCK_TYPE2)
DEFINE_BLOCK_LOAD16(block_load0, words0, weights0, pairs0, BLOCK_TYPE0)
DEFINE_BLOCK_LOAD16(block_load1, words1, weights1, pairs1, BLOCK_TYPE1)
DEFINE_BLOCK_LOAD16(block_load2, words2, weights2, pairs2, BLOCK_TYPE2)
#endif

shared float partial[ROWS][LANES];
shared float squares[INVOCATIONS];        // a subgroup's sum each
shared float slice_sums[2][ROWS];         // each slot's sums of rows a and b

// The input's channels k .. k + 7 (k / 4 given), times the norm's weights
// with norm: RMSNorm's 1 / rms is applied to the sum instead.
vec4 input4(uint at) { return pc.norm != 0u ? x4[at] * norm4[at] : x4[at]; }
float input1(uint k) { return pc.norm != 0u ? x[k] * norm_weight[k] : x[k]; }

// This lane's share of row `row` of a weight buffer (LOAD: its load8, WORDS:
// its words) against the input: four 16-byte pieces in flight a lane.
#define ROW_SUM(LOAD, WORDS, row, sum)                                                      \
  {                                                                                         \
    const uint row_start = (row) * pc.n_in;                                                 \
    if (pc.n_in % 8u == 0u) {                                                               \
      const uint STRIDE = 8u * LANES * SLICES;                                           \
      uint k = 8u * (lane + LANES * slice);                                                 \
      vec4 lo0, hi0, lo1, hi1, lo2, hi2, lo3, hi3;                                          \
      for (; PIECES_IN_FLIGHT && k + 3u * STRIDE < pc.n_in; k += 4u * STRIDE) {             \
        LOAD(row_start + k, lo0, hi0);                                                      \
        LOAD(row_start + k + STRIDE, lo1, hi1);                                             \
        LOAD(row_start + k + 2u * STRIDE, lo2, hi2);                                        \
        LOAD(row_start + k + 3u * STRIDE, lo3, hi3);                                        \
        sum += dot(lo0, input4(k / 4u)) + dot(hi0, input4(k / 4u + 1u));                    \
        sum += dot(lo1, input4((k + STRIDE) / 4u)) + dot(hi1, input4((k + STRIDE) / 4u + 1u)); \
        sum += dot(lo2, input4((k + 2u * STRIDE) / 4u)) + dot(hi2, input4((k + 2u * STRIDE) / 4u + 1u)); \
        sum += dot(lo3, input4((k + 3u * STRIDE) / 4u)) + dot(hi3, input4((k + 3u * STRIDE) / 4u + 1u)); \
      }                                                                                     \
      for (; k < pc.n_in; k += STRIDE) {                                                    \
        LOAD(row_start + k, lo0, hi0);                                                      \
        sum += dot(lo0, input4(k / 4u)) + dot(hi0, input4(k / 4u + 1u));                    \
      }                                                                                     \
    } else {                                                                                \
      for (uint k = 2u * (lane + LANES * slice); k < pc.n_in; k += 2u * LANES * SLICES) { \
        const uint e = row_start + k;                                                       \
        vec2 w;                                                                             \
        if (ELEMENT_TYPE == ELEMENT_F32) {                                                  \
          w = uintBitsToFloat(uvec2(WORDS[e], WORDS[e + 1u]));                              \
        } else {                                                                            \
          const uint word = WORDS[e / 2u];                                                  \
          w = vec2(element_in_word(word, e), element_in_word(word, e + 1u));                \
        }                                                                                   \
        sum += dot(w, vec2(input1(k), input1(k + 1u)));                                     \
      }                                                                                     \
    }                                                                                       \
  }

// Two rows at once (of one weight buffer or two), each input piece loaded
// once for both: the input, read from cache, costs as many bytes a piece as
// the weights, so sharing it is what lets the weights stream.
#define ROW_PAIR_SUM(LOAD_A, WORDS_A, row_a, sum_a, LOAD_B, WORDS_B, row_b, sum_b)              \
  {                                                                                           \
    if (pc.n_in % 8u == 0u) {                                                                 \
      const uint start_a = (row_a) * pc.n_in, start_b = (row_b) * pc.n_in;                    \
      const uint STRIDE = 8u * LANES * SLICES;                                             \
      uint k = 8u * (lane + LANES * slice);                                                   \
      vec4 a0, a1, b0, b1, c0, c1, d0, d1;                                                    \
      for (; PIECES_IN_FLIGHT && k + STRIDE < pc.n_in; k += 2u * STRIDE) {                    \
        LOAD_A(start_a + k, a0, a1);                                                          \
        LOAD_B(start_b + k, b0, b1);                                                          \
        LOAD_A(start_a + k + STRIDE, c0, c1);                                                 \
        LOAD_B(start_b + k + STRIDE, d0, d1);                                                 \
        vec4 lo = input4(k / 4u), hi = input4(k / 4u + 1u);                                   \
        sum_a += dot(a0, lo) + dot(a1, hi);                                                   \
        sum_b += dot(b0, lo) + dot(b1, hi);                                                   \
        lo = input4((k + STRIDE) / 4u);                                                       \
        hi = input4((k + STRIDE) / 4u + 1u);                                                  \
        sum_a += dot(c0, lo) + dot(c1, hi);                                                   \
        sum_b += dot(d0, lo) + dot(d1, hi);                                                   \
      }                                                                                       \
      for (; k < pc.n_in; k += STRIDE) {                                                      \
        LOAD_A(start_a + k, a0, a1);                                                          \
        LOAD_B(start_b + k, b0, b1);                                                          \
        const vec4 lo = input4(k / 4u), hi = input4(k / 4u + 1u);                             \
        sum_a += dot(a0, lo) + dot(a1, hi);                                                   \
        sum_b += dot(b0, lo) + dot(b1, hi);                                                   \
      }                                                                                       \
    } else {                                                                                  \
      ROW_SUM(LOAD_A, WORDS_A, row_a, sum_a)                                                  \
      ROW_SUM(LOAD_B, WORDS_B, row_b, sum_b)                                                  \
    }                                                                                         \
  }

#if MATVEC_READS_BLOCKS
// A matrix of blocks: lane p of the row's parts (16 or 32 values,
// ggml_blocks.glsl) against the input's runs there; on GPUs two parts in
// flight a lane where a part is 16 values.
void part_inputs(uint type, uint block, uint part, out vec4 x[8]) {
  uvec4 first, second;
  ggml_part_runs(type, part, first, second);
  const uint at = block * ggml_block_values(type);
  first = (at + first) / 4u;
  second = (at + second) / 4u;
  for (uint i = 0u; i < 4u; ++i) x[i] = input4(first[i]);
  if (ggml_part_values(type) == 32u)
    for (uint i = 0u; i < 4u; ++i) x[4u + i] = input4(second[i]);
}
float part_dot(uint type, vec4 q[8], vec4 scale[2], vec4 shift[2], vec4 x[8]) {
  const vec4 ones = vec4(1.0);
  const bool wide = ggml_part_values(type) == 32u;
  float sum = dot(scale[0], vec4(dot(q[0], x[0]), dot(q[1], x[1]), dot(q[2], x[2]), dot(q[3], x[3])));
  if (wide) sum += dot(scale[1], vec4(dot(q[4], x[4]), dot(q[5], x[5]), dot(q[6], x[6]), dot(q[7], x[7])));
  if (ggml_has_shift(type)) {
    sum += dot(shift[0], vec4(dot(x[0], ones), dot(x[1], ones), dot(x[2], ones), dot(x[3], ones)));
    if (wide) sum += dot(shift[1], vec4(dot(x[4], ones), dot(x[5], ones), dot(x[6], ones), dot(x[7], ones)));
  }
  return sum;
}

#define BLOCK_ROW_SUM(TYPE, LOAD_PART, row, sum)                                            \
  {                                                                                         \
    const uint PER_BLOCK = ggml_parts(TYPE), STEP = LANES * SLICES;                         \
    const uint row_blocks = pc.n_in / ggml_block_values(TYPE), parts = row_blocks * PER_BLOCK; \
    const uint first = (row) * row_blocks;                                                  \
    const bool two_in_flight = PIECES_IN_FLIGHT && ggml_part_values(TYPE) == 16u;           \
    vec4 q[8], q_next[8], x[8], x_next[8], scale[2], shift[2], scale_next[2], shift_next[2]; \
    uint p = lane + LANES * slice;                                                          \
    for (; two_in_flight && p + STEP < parts; p += 2u * STEP) {                             \
      LOAD_PART(first + p / PER_BLOCK, p % PER_BLOCK, q, scale, shift);                     \
      LOAD_PART(first + (p + STEP) / PER_BLOCK, (p + STEP) % PER_BLOCK, q_next, scale_next, shift_next); \
      part_inputs(TYPE, p / PER_BLOCK, p % PER_BLOCK, x);                                   \
      part_inputs(TYPE, (p + STEP) / PER_BLOCK, (p + STEP) % PER_BLOCK, x_next);            \
      sum += part_dot(TYPE, q, scale, shift, x) + part_dot(TYPE, q_next, scale_next, shift_next, x_next); \
    }                                                                                       \
    for (; p < parts; p += STEP) {                                                          \
      LOAD_PART(first + p / PER_BLOCK, p % PER_BLOCK, q, scale, shift);                     \
      part_inputs(TYPE, p / PER_BLOCK, p % PER_BLOCK, x);                                   \
      sum += part_dot(TYPE, q, scale, shift, x);                                            \
    }                                                                                       \
  }

// Two rows of one block type at once, each input run loaded once for both.
#define BLOCK_ROW_PAIR_SUM(TYPE, LOAD_A, row_a, sum_a, LOAD_B, row_b, sum_b)                \
  {                                                                                         \
    const uint PER_BLOCK = ggml_parts(TYPE), STEP = LANES * SLICES;                         \
    const uint row_blocks = pc.n_in / ggml_block_values(TYPE), parts = row_blocks * PER_BLOCK; \
    const uint first_a = (row_a) * row_blocks, first_b = (row_b) * row_blocks;              \
    const bool two_in_flight = PIECES_IN_FLIGHT && ggml_part_values(TYPE) == 16u;           \
    vec4 qa[8], qb[8], qc[8], qd[8], x[8], x_next[8];                                       \
    vec4 scale_a[2], shift_a[2], scale_b[2], shift_b[2], scale_c[2], shift_c[2], scale_d[2], shift_d[2]; \
    uint p = lane + LANES * slice;                                                          \
    for (; two_in_flight && p + STEP < parts; p += 2u * STEP) {                             \
      const uint block = p / PER_BLOCK, part = p % PER_BLOCK;                               \
      const uint block_next = (p + STEP) / PER_BLOCK, part_next = (p + STEP) % PER_BLOCK;   \
      LOAD_A(first_a + block, part, qa, scale_a, shift_a);                                  \
      LOAD_B(first_b + block, part, qb, scale_b, shift_b);                                  \
      LOAD_A(first_a + block_next, part_next, qc, scale_c, shift_c);                        \
      LOAD_B(first_b + block_next, part_next, qd, scale_d, shift_d);                        \
      part_inputs(TYPE, block, part, x);                                                    \
      part_inputs(TYPE, block_next, part_next, x_next);                                     \
      sum_a += part_dot(TYPE, qa, scale_a, shift_a, x) + part_dot(TYPE, qc, scale_c, shift_c, x_next); \
      sum_b += part_dot(TYPE, qb, scale_b, shift_b, x) + part_dot(TYPE, qd, scale_d, shift_d, x_next); \
    }                                                                                       \
    for (; p < parts; p += STEP) {                                                          \
      const uint block = p / PER_BLOCK, part = p % PER_BLOCK;                               \
      LOAD_A(first_a + block, part, qa, scale_a, shift_a);                                  \
      LOAD_B(first_b + block, part, qb, scale_b, shift_b);                                  \
      part_inputs(TYPE, block, part, x);                                                    \
      sum_a += part_dot(TYPE, qa, scale_a, shift_a, x);                                     \
      sum_b += part_dot(TYPE, qb, scale_b, shift_b, x);                                     \
    }                                                                                       \
  }

// Matrix A's row (0, 1 or 2: its bindings and block type), in either form.
#define MATRIX_ROW_SUM(A, row, sum)                                                         \
  if (BLOCK_TYPE##A == GGML_PLAIN) ROW_SUM(plain_load##A, words##A, row, sum)               \
  else BLOCK_ROW_SUM(BLOCK_TYPE##A, block_load##A##_part, row, sum)
// Rows of matrices A and B, sharing the input where their forms agree.
#define MATRIX_ROW_PAIR_SUM(A, row_a, sum_a, B, row_b, sum_b)                                \
  if (BLOCK_TYPE##A == GGML_PLAIN && BLOCK_TYPE##B == GGML_PLAIN)                             \
    ROW_PAIR_SUM(plain_load##A, words##A, row_a, sum_a, plain_load##B, words##B, row_b, sum_b) \
  else if (BLOCK_TYPE##A == BLOCK_TYPE##B)                                                    \
    BLOCK_ROW_PAIR_SUM(BLOCK_TYPE##A, block_load##A##_part, row_a, sum_a, block_load##B##_part, row_b, sum_b) \
  else {                                                                                      \
    MATRIX_ROW_SUM(A, row_a, sum_a)                                                           \
    MATRIX_ROW_SUM(B, row_b, sum_b)                                                           \
  }
#else
// model_matvec.comp: every matrix in the storage type.
#define MATRIX_ROW_SUM(A, row, sum) ROW_SUM(plain_load##A, words##A, row, sum)
#define MATRIX_ROW_PAIR_SUM(A, row_a, sum_a, B, row_b, sum_b) \
  ROW_PAIR_SUM(plain_load##A, words##A, row_a, sum_a, plain_load##B, words##B, row_b, sum_b)
#endif

// The sum of this slot's lanes (every invocation calls it): one subgroup
// operation where a subgroup is a slot (NVIDIA's 32), else shared memory.
float slot_total(uint slot, uint lane, float sum) {
  if (gl_SubgroupSize == LANES) return subgroupAdd(sum);
  partial[slot][lane] = sum;
  barrier();
  for (uint half_width = LANES / 2u; half_width > 0u; half_width /= 2u) {
    if (lane < half_width) partial[slot][lane] += partial[slot][lane + half_width];
    barrier();
  }
  const float total = partial[slot][0];
  barrier();
  return total;
}

// Which matrix row r of the dispatch's rows belongs to (3: none).
uint matrix_of(uint r) {
  return r < pc.rows0 ? 0u : r < pc.rows0 + pc.rows1 ? 1u : r < pc.rows0 + pc.rows1 + pc.rows2 ? 2u : 3u;
}

// Row r's output, lane 0's to write.
void store(uint r, float total) {
  const bool bias = pc.has_bias != 0u;
  if (r < pc.rows0) {
    const float value = total + (bias ? bias0[r] : 0.0);
    y0[r] = pc.accumulate != 0u ? y0[r] + value : value;
  } else if (r < pc.rows0 + pc.rows1) {
    const uint i = r - pc.rows0;
    const float value = total + (bias ? bias1[i] : 0.0);
    y1[i] = pc.accumulate != 0u ? y1[i] + value : value;
  } else if (r < pc.rows0 + pc.rows1 + pc.rows2) {
    const uint i = r - pc.rows0 - pc.rows1;
    const float value = total + (bias ? bias2[i] : 0.0);
    y2[i] = pc.accumulate != 0u ? y2[i] + value : value;
  }
}

// RMSNorm's 1 / rms of the input (every invocation calls it; 1 without
// norm). Only the row sums' ends need it, so on a GPU it is taken after the
// weights' stream rather than before: a few kB from cache, off the stream's path.
float norm_scale() {
  if (pc.norm == 0u) return 1.0;
  float s = 0.0;
  for (uint k = gl_LocalInvocationIndex; k < pc.n_in; k += INVOCATIONS) s += x[k] * x[k];
  s = subgroupAdd(s);
  if (subgroupElect()) squares[gl_SubgroupID] = s;
  barrier();
  float total = 0.0;
  for (uint i = 0u; i < gl_NumSubgroups; ++i) total += squares[i];
  return inversesqrt(total / float(pc.n_in) + pc.eps);
}

// The whole rows' sums (every invocation calls it; the first slice's lane 0
// of a row slot uses them): each slice's subgroup total, added over the slices.
vec2 row_totals(uint slot, uint slice, uint lane, float sum_a, float sum_b) {
  const float a = slot_total(slot, lane, sum_a), b = slot_total(slot, lane, sum_b);
  if (SLICES == 1u) return vec2(a, b);
  if (lane == 0u) {
    slice_sums[0][slot] = a;
    slice_sums[1][slot] = b;
  }
  barrier();
  vec2 total = vec2(0.0);
  if (slice == 0u)
    for (uint s = 0u; s < SLICES; ++s) total += vec2(slice_sums[0][slot + s], slice_sums[1][slot + s]);
  return total;
}

// Head `head` of q, k or v (heads of q, then k, then v) rotated into the
// queries (and kept queries) or the cache at the step's position, v copied.
void rope_head(uint head) {
  const uint d = pc.head_dim, q_heads = pc.rows0 / d, k_heads = pc.rows1 / d;
  const bool interleaved = pc.interleaved != 0u;
  for (uint c = 2u * gl_LocalInvocationIndex; c < d; c += 2u * INVOCATIONS) {
    if (head < q_heads) {
      const uint row = head * d;
      const vec2 value = ROPE_ROTATED_PAIR(y0, row, c, d, interleaved, pc.position);
      STORE_PAIR(queries, row + c, value)
      if (pc.keep_queries != 0u) {
        const uint kept = (head * pc.capacity + pc.position) * d + c;
        STORE_PAIR(kept_queries, kept, value)
      }
    } else if (head < q_heads + k_heads) {
      const uint g = head - q_heads, row = g * d, e = (g * pc.capacity + pc.position) * d + c;
      const vec2 value = ROPE_ROTATED_PAIR(y1, row, c, d, interleaved, pc.position);
      STORE_PAIR(key_cache, e, value)
    } else {
      const uint g = head - q_heads - k_heads, e = (g * pc.capacity + pc.position) * d + c;
      const vec2 value = vec2(y2[g * d + c], y2[g * d + c + 1u]);
      STORE_PAIR(value_cache, e, value)
    }
  }
}

// With rope: this workgroup's rows [first_row, first_row + count) counted
// into their heads' totals, and each head it completes rotated by it. A
// head needs every workgroup's rows, so the last to finish one takes it,
// which saves a dispatch (and its drain) a layer; no workgroup waits.
shared uint finished_heads[2u * ROWS + 1u];
shared uint finished_count;
void rope_finished_heads(uint first_row, uint count) {
  const uint d = pc.head_dim, end_row = min(first_row + count, pc.rows0 + pc.rows1 + pc.rows2);
  memoryBarrierBuffer();
  barrier();
  if (gl_LocalInvocationIndex == 0u) {
    uint finished = 0u;
    for (uint head = first_row / d; head * d < end_row; ++head) {
      const uint rows_here = min(end_row, (head + 1u) * d) - max(first_row, head * d);
      if (atomicAdd(head_rows[head], rows_here) + rows_here == d) {
        head_rows[head] = 0u;  // ready for the next step
        finished_heads[finished++] = head;
      }
    }
    finished_count = finished;
  }
  barrier();
  memoryBarrierBuffer();
  for (uint i = 0u; i < finished_count; ++i) rope_head(finished_heads[i]);
}

void main() {
  // Slot = row slot x slices + slice: a row's slices are neighbouring subgroups.
  const uint lane = gl_LocalInvocationIndex % LANES, slot = gl_LocalInvocationIndex / LANES;
  const uint slice = slot % SLICES, row_slot = slot / SLICES, row_slots = ROWS / SLICES;
  const float scale_before = NORM_AFTER_STREAM ? 1.0 : norm_scale();
  // With one token a head-major input is row-major: [heads, 1, d] is [heads * d].
  float sum_a = 0.0, sum_b = 0.0;
  if (pc.gated != 0u) {  // a workgroup takes row_slots rows of gate and of up
    const uint r = gl_WorkGroupID.x * row_slots + row_slot;
    if (r < pc.rows0) { MATRIX_ROW_PAIR_SUM(0, r, sum_a, 1, r, sum_b) }
    const float scale = NORM_AFTER_STREAM ? norm_scale() : scale_before;
    const vec2 totals = row_totals(slot, slice, lane, sum_a, sum_b) * scale;
    if (lane == 0u && slice == 0u && r < pc.rows0) {
      const float gate = totals.x, up = totals.y, value = gate / (1.0 + exp(-gate)) * up;
      y0[r] = pc.accumulate != 0u ? y0[r] + value : value;
    }
    return;
  }
  // A workgroup takes 2 row_slots rows: a row slot, rows r and r + row_slots.
  const uint r_a = gl_WorkGroupID.x * 2u * row_slots + row_slot, r_b = r_a + row_slots;
  const uint m_a = matrix_of(r_a), m_b = matrix_of(r_b);
  const uint local_a = r_a - (m_a == 0u ? 0u : m_a == 1u ? pc.rows0 : pc.rows0 + pc.rows1);
  const uint local_b = r_b - (m_b == 0u ? 0u : m_b == 1u ? pc.rows0 : pc.rows0 + pc.rows1);
  if (m_a == m_b) {
    if (m_a == 0u) { MATRIX_ROW_PAIR_SUM(0, local_a, sum_a, 0, local_b, sum_b) }
    else if (m_a == 1u) { MATRIX_ROW_PAIR_SUM(1, local_a, sum_a, 1, local_b, sum_b) }
    else if (m_a == 2u) { MATRIX_ROW_PAIR_SUM(2, local_a, sum_a, 2, local_b, sum_b) }
  } else {  // the rows straddle two matrices (or the end)
    if (m_a == 0u) { MATRIX_ROW_SUM(0, local_a, sum_a) }
    else if (m_a == 1u) { MATRIX_ROW_SUM(1, local_a, sum_a) }
    else if (m_a == 2u) { MATRIX_ROW_SUM(2, local_a, sum_a) }
    if (m_b == 1u) { MATRIX_ROW_SUM(1, local_b, sum_b) }
    else if (m_b == 2u) { MATRIX_ROW_SUM(2, local_b, sum_b) }
  }
  const float scale = NORM_AFTER_STREAM ? norm_scale() : scale_before;
  const vec2 totals = row_totals(slot, slice, lane, sum_a, sum_b) * scale;
  if (lane == 0u && slice == 0u) {
    store(r_a, totals.x);
    store(r_b, totals.y);
  }
  if (ROPE) rope_finished_heads(gl_WorkGroupID.x * 2u * row_slots, 2u * row_slots);
}
