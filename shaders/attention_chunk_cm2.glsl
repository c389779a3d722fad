// The body of attention_chunk_cm2.comp and sparse_attention_chunk_cm2.comp:
// a prefill chunk's queries over one split of a key list, FlashAttention-2's
// loop on tensor cores through VK_NV_cooperative_matrix2. The engine runs it
// where Device::cooperative_matrix2() and the keys are fp16
// (engine/kernels/attention.cpp); attention_chunk.glsl serves devices with only
// subgroup fragments. Outputs as the other partial kernels': per (head,
// query) row and split, the unnormalised O and (max, sum) of the logits in
// log2 units, for attention_merge.
//
// A workgroup owns ROWS (head, query) rows (tile_row: the heads of a GQA
// group share the tile, so each key tile loaded serves them all) and walks
// its split KEY_TILE keys at a time: S = Q K^T, the online softmax with row
// reductions, O = O e^(m_old - m) + P V. The matrices are of workgroup scope,
// so the driver stages the tiles and lays out the fragments. Dense keys load
// by tensor addressing from [G, T, d], clamped to the split's end (past it
// they read as 0, never as an unwritten cache slot); a key list's keys are
// gathered into shared memory by the invocations, and the queries' (head,
// query) rows by a decode function, which reads the element its coordinates
// name. The causal mask and a key list's -1 padding apply where a tile can
// hide a key from some row; the dense split's tiles below the tile's first
// query see every key unmasked.
//
// On the H100 (driver 580) this kernel ran slower than attention_chunk.glsl's
// KHR version, so the engine takes it only on request
// (KVSCOPE_COOPERATIVE_MATRIX2=1; engine/kernels/kernel_choice.h, docs/perf.md).
// The including kernel defines KEY_LIST: 0 = keys [0, position], 1 = a list.
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_control_flow_attributes : require

layout(constant_id = 0) const uint HEAD_DIM = 128;  // a multiple of 16
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;  // fp16 only (load.glsl's name)
layout(constant_id = 2) const uint ROWS = 128;      // (head, query) rows a workgroup
layout(local_size_x_id = 3) in;                     // a size the driver lists for these matrices
layout(constant_id = 4) const uint KEY_TILE = 64;

#include "common.glsl"
#include "load.glsl"
#include "attention_bindings.glsl"
layout(std430, binding = 0) readonly buffer QueriesHalf { float16_t queries_half[]; };  // [H, n_queries, d]
layout(std430, binding = 1) readonly buffer KeysHalf { float16_t keys_half[]; };        // [G, T, d]
layout(std430, binding = 2) readonly buffer ValuesHalf { float16_t values_half[]; };    // [G, T, d]

layout(buffer_reference, std430, buffer_reference_align = 2) buffer HalfElement { float16_t value; };

const uint PIECES = HEAD_DIM / 8u;  // 16-byte pieces of a key's row
#if KEY_LIST
shared uvec4 staged_keys[KEY_TILE * PIECES];
shared uvec4 staged_values[KEY_TILE * PIECES];
#endif

#define CLAMPED gl_CooperativeMatrixClampModeConstantNV
#define SCORES coopmat<float, gl_ScopeWorkgroup, ROWS, KEY_TILE, gl_MatrixUseAccumulator>
#define OUTPUTS coopmat<float, gl_ScopeWorkgroup, ROWS, HEAD_DIM, gl_MatrixUseAccumulator>

uint list_index() { return gl_WorkGroupID.z / pc.head_blocks; }
uint block_index() { return gl_WorkGroupID.z % pc.head_blocks; }
uint kv_head_index() { return list_index() * pc.heads_per_list / (pc.n_heads / pc.n_kv_heads); }

// Channel c of the tile's row r: its (head, query) from tile_row; 0 past the chunk.
float16_t query_element(const in HalfElement unused, const in uint coords[2], const in uint in_block[2]) {
  uint key_limit, output_row;
  tile_row(coords[0], gl_WorkGroupID.y, list_index(), block_index(), key_limit, output_row);
  return key_limit > 0u ? queries_half[output_row * HEAD_DIM + coords[1]] : float16_t(0.0);
}


// A score as the softmax takes it: in log2 units, LOWEST_FLOAT where row r
// cannot see the key at column c of the tile from slot0.
float masked_score(const in uint r, const in uint c, const in float s, const in uint slot0) {
  uint key_limit, output_row;
  tile_row(r, gl_WorkGroupID.y, list_index(), block_index(), key_limit, output_row);
#if KEY_LIST
  const int key = slot_key(list_index(), slot0 + c);
  const bool visible = key >= 0 && uint(key) < key_limit;
#else
  const bool visible = slot0 + c < key_limit;
#endif
  return visible ? s * pc.scale_log2 : LOWEST_FLOAT;
}
float scaled_score(const in uint r, const in uint c, const in float s) { return s * pc.scale_log2; }
float largest(const in float a, const in float b) { return max(a, b); }
float pick_first(const in float a, const in float b) { return a; }
float larger_element(const in uint r, const in uint c, const in float a, const in float b) { return max(a, b); }
// P = 2^(s - m), 0 for a hidden key (also where m is still LOWEST_FLOAT).
float probability(const in uint r, const in uint c, const in float s, const in float m) {
  return s == LOWEST_FLOAT ? 0.0 : exp2(s - m);
}
float exp2_element(const in uint r, const in uint c, const in float x) { return exp2(x); }

// Row r's O channel c, and its (max, sum) from column 0, to the split's partials.
float store_output(const in uint r, const in uint c, const in float o, const in uint split) {
  uint key_limit, output_row;
  tile_row(r, gl_WorkGroupID.y, list_index(), block_index(), key_limit, output_row);
  if (key_limit > 0u && c < HEAD_DIM) partial_output[(output_row * pc.n_splits + split) * HEAD_DIM + c] = o;
  return o;
}
float store_max(const in uint r, const in uint c, const in float m, const in uint split) {
  uint key_limit, output_row;
  tile_row(r, gl_WorkGroupID.y, list_index(), block_index(), key_limit, output_row);
  if (key_limit > 0u && c == 0u) partial_stats[output_row * pc.n_splits + split].x = m;
  return m;
}
float store_sum(const in uint r, const in uint c, const in float l, const in uint split) {
  uint key_limit, output_row;
  tile_row(r, gl_WorkGroupID.y, list_index(), block_index(), key_limit, output_row);
  if (key_limit > 0u && c == 0u) partial_stats[output_row * pc.n_splits + split].y = l;
  return l;
}

// One key tile from slot0: scores, the online softmax, O. MASKED: the causal
// mask (and a list's padding) applies.
#define KEY_STEP(MASKED)                                                                                           \
  {                                                                                                                \
    coopmat<float16_t, gl_ScopeWorkgroup, HEAD_DIM, KEY_TILE, gl_MatrixUseB> k_t;                                  \
    coopmat<float16_t, gl_ScopeWorkgroup, KEY_TILE, HEAD_DIM, gl_MatrixUseB> v;                                    \
    LOAD_KEYS(k_t, v, slot0, MASKED);                                                                                      \
    SCORES s = coopMatMulAdd(q, k_t, SCORES(0.0));                                                                 \
    if (MASKED) coopMatPerElementNV(s, s, masked_score, slot0);                                                    \
    else coopMatPerElementNV(s, s, scaled_score);                                                                  \
    SCORES tile_max;                                                                                               \
    coopMatReduceNV(tile_max, s, gl_CooperativeMatrixReduceRowNV, largest);                                        \
    const SCORES old_max = row_max;                                                                                \
    coopMatPerElementNV(row_max, tile_max, larger_element, old_max);                                               \
    SCORES p, rescale;                                                                                             \
    coopMatPerElementNV(p, s, probability, row_max);                                                               \
    coopMatPerElementNV(rescale, old_max - row_max, exp2_element);                                                 \
    const coopmat<float16_t, gl_ScopeWorkgroup, ROWS, KEY_TILE, gl_MatrixUseA> p_half =                            \
        coopmat<float16_t, gl_ScopeWorkgroup, ROWS, KEY_TILE, gl_MatrixUseA>(p);                                   \
    /* The sum counts P as P V multiplies it (fp16): P times a matrix of ones. */                                  \
    row_sum = rescale * row_sum + coopMatMulAdd(p_half, ones, SCORES(0.0));                                        \
    OUTPUTS rescale_wide;                                                                                          \
    coopMatReduceNV(rescale_wide, rescale, gl_CooperativeMatrixReduceRowNV, pick_first);                           \
    o = coopMatMulAdd(p_half, v, o * rescale_wide);                                                                \
  }

void main() {
  const uint split = gl_WorkGroupID.x, query_tile = gl_WorkGroupID.y;
  const uint list = list_index(), kv_head = kv_head_index();

  tensorLayoutNV<2, CLAMPED> query_layout = createTensorLayoutNV(2, CLAMPED);
  query_layout = setTensorLayoutDimensionNV(query_layout, ROWS, HEAD_DIM);
  coopmat<float16_t, gl_ScopeWorkgroup, ROWS, HEAD_DIM, gl_MatrixUseA> q;
  coopMatLoadTensorNV(q, queries_half, 0, sliceTensorLayoutNV(query_layout, 0, ROWS, 0, HEAD_DIM), query_element);

#if KEY_LIST
  const uint slots = pc.list_length + pc.own_count;
#else
  // The tile's largest causal limit, that of its last query.
  const uint slots = causal_limit(min(pc.n_queries, (query_tile + 1u) * pc.queries_per_tile) - 1u);
#endif
  const uint slot_begin = split * pc.split_keys;
  const uint slot_end = min(slot_begin + pc.split_keys, slots);

  tensorLayoutNV<2, CLAMPED> key_layout = createTensorLayoutNV(2, CLAMPED);
  key_layout = setTensorLayoutDimensionNV(key_layout, slot_end, HEAD_DIM);
  tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
#if KEY_LIST
  // A list's keys and values, gathered by the invocations into shared memory
  // in 16-byte pieces (by decode functions, element by element, QuoKA's
  // sparse chunk took 9x as long on the H100: docs/perf-experiments.md).
#define LOAD_KEYS(K_T, V, SLOT0, MASKED)                                                                          \
  barrier();                                                                                                       \
  for (uint i = gl_LocalInvocationIndex; i < KEY_TILE * PIECES; i += gl_WorkGroupSize.x) {                         \
    const uint slot = SLOT0 + i / PIECES;                                                                          \
    const int key = slot < slot_end ? slot_key(list, slot) : -1;                                                   \
    const uint at = (kv_head * pc.n_tokens + uint(max(key, 0))) * PIECES + i % PIECES;                             \
    staged_keys[i] = key < 0 ? uvec4(0) : keys[at];                                                                \
    staged_values[i] = key < 0 ? uvec4(0) : values_[at];                                                           \
  }                                                                                                                \
  barrier();                                                                                                       \
  coopMatLoad(K_T, staged_keys, 0, PIECES, gl_CooperativeMatrixLayoutColumnMajor);                                 \
  coopMatLoad(V, staged_values, 0, PIECES, gl_CooperativeMatrixLayoutRowMajor)
#else
  const uint kv_offset = kv_head * pc.n_tokens * HEAD_DIM;
  // Tiles every row sees lie below slot_end: no bounds to check.
  tensorLayoutNV<2> inner_key_layout = createTensorLayoutNV(2);
  inner_key_layout = setTensorLayoutDimensionNV(inner_key_layout, pc.n_tokens, HEAD_DIM);
#define LOAD_KEYS(K_T, V, SLOT0, MASKED)                                                                          \
  if (MASKED) {                                                                                                    \
    coopMatLoadTensorNV(K_T, keys_half, kv_offset, sliceTensorLayoutNV(key_layout, SLOT0, KEY_TILE, 0, HEAD_DIM), transposed); \
    coopMatLoadTensorNV(V, values_half, kv_offset, sliceTensorLayoutNV(key_layout, SLOT0, KEY_TILE, 0, HEAD_DIM)); \
  } else {                                                                                                         \
    coopMatLoadTensorNV(K_T, keys_half, kv_offset, sliceTensorLayoutNV(inner_key_layout, SLOT0, KEY_TILE, 0, HEAD_DIM), transposed); \
    coopMatLoadTensorNV(V, values_half, kv_offset, sliceTensorLayoutNV(inner_key_layout, SLOT0, KEY_TILE, 0, HEAD_DIM)); \
  }
#endif

  const coopmat<float16_t, gl_ScopeWorkgroup, KEY_TILE, KEY_TILE, gl_MatrixUseB> ones =
      coopmat<float16_t, gl_ScopeWorkgroup, KEY_TILE, KEY_TILE, gl_MatrixUseB>(1.0);
  OUTPUTS o = OUTPUTS(0.0);
  SCORES row_max = SCORES(LOWEST_FLOAT), row_sum = SCORES(0.0);

#if KEY_LIST
  for (uint slot0 = slot_begin; slot0 < slot_end; slot0 += KEY_TILE) KEY_STEP(true)
#else
  // Every row sees every key of the split's tiles below its first query's limit.
  const uint seen_by_all = min(slot_end, causal_limit(query_tile * pc.queries_per_tile));
  const uint unmasked_end = seen_by_all > slot_begin ? slot_begin + (seen_by_all - slot_begin) / KEY_TILE * KEY_TILE : slot_begin;
  for (uint slot0 = slot_begin; slot0 < unmasked_end; slot0 += KEY_TILE) KEY_STEP(false)
  for (uint slot0 = unmasked_end; slot0 < slot_end; slot0 += KEY_TILE) KEY_STEP(true)
#endif

  coopMatPerElementNV(o, o, store_output, split);
  coopMatPerElementNV(row_max, row_max, store_max, split);
  coopMatPerElementNV(row_sum, row_sum, store_sum, split);
}
