// The body of attention_chunk.comp and sparse_attention_chunk.comp: a chunk of
// queries (prefill) over one split of a key list on tensor cores, through
// VK_NV_cooperative_matrix (16x16x16, fp16 inputs, fp32 accumulators), or the
// KHR version the build rewrites from it (shaders/spirv_coopmat_khr.cpp: K^T
// and V load as B operands in B's layout, 1.4x faster on the H100). fp16
// keys and values only; attention_tile.glsl serves every other device and type.
//
// A workgroup is SUBGROUPS subgroups of 32 (8, or 4 where shared memory holds
// no more: engine/kernels/attention.cpp); each owns 16 of the tile's (head, query)
// rows, keeps its queries as fp16 fragments and its outputs as fp32 fragments
// for the whole split. Per 32 key slots, which all subgroups share: keys and
// values are copied raw (no conversion) to shared memory; S = Q K^T on tensor
// cores; each lane scales and masks its own elements of S (a dense split's
// tiles that every row sees in full skip the mask) and keeps the online
// softmax of its two rows in registers, as FlashAttention-2 does: the row's
// max meets over the row's four lanes with two shuffles, O is rescaled
// element by element, and P = exp2(S - m) is formed in fp16 in place as the A
// operand of O += P V (S and P through shared memory, two lanes a row, took
// the H100's 32k dense chunk 680 us against 482: docs/perf-experiments.md).
// That needs the fragments' element layout, which
// cooperative matrices leave to the implementation: the engine runs this
// kernel only where has_mma_fragment_layout found NVIDIA's (lane l, g = l / 4,
// t = l % 4: element i is row g + 8 (i / 4), column 2t + (i & 1) + 8 ((i / 2) & 1),
// for A operands and accumulators alike). (max, sum) per row in log2 units and
// the unnormalised O go to attention_merge, as from the other partial kernels.
// The including kernel defines KEY_LIST: 0 = keys [0, position], 1 = a list.
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_EXT_control_flow_attributes : require

layout(constant_id = 0) const uint HEAD_DIM = 128;  // a multiple of 32
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(constant_id = 2) const uint SUBGROUPS = 4;  // of 32 invocations, FRAGMENT rows each
layout(local_size_x_id = 3) in;                    // SUBGROUPS x 32

#include "common.glsl"
#include "load.glsl"
#include "attention_bindings.glsl"
layout(std430, binding = 3) writeonly buffer PartialOutputPieces { vec4 partial_output_pieces[]; };  // partial_output

const uint ROWS = SUBGROUPS * 16u, KEY_TILE = ATTENTION_CHUNK_KEY_TILE, FRAGMENT = 16;
const uint CHUNKS = HEAD_DIM / 8u;          // 16-byte pieces of a row
const uint ROW_PIECES = CHUNKS + 1u;        // padded row in shared memory
const uint D_BLOCKS = HEAD_DIM / FRAGMENT;
const uint KEY_BLOCKS = KEY_TILE / FRAGMENT;
// Row stride (floats) of a subgroup's region of scores_tile, through which O
// leaves: padded so that fragment stores spread over the banks.
const uint S_STRIDE = ATTENTION_CHUNK_S_STRIDE;
const uint TILE_PIECES = KEY_TILE * CHUNKS;  // of a tile's keys (and again of its values)
const uint KEY_PIECES = (TILE_PIECES + SUBGROUPS * 32u - 1u) / (SUBGROUPS * 32u);  // per invocation and tile
const uint PIECES = 2u * KEY_PIECES;
// Query pieces per invocation: ROWS x CHUNKS over 32 x SUBGROUPS invocations.
const uint QUERY_PIECES = CHUNKS / 2u;

#define HALF_FRAGMENT fcoopmatNV<16, gl_ScopeSubgroup, FRAGMENT, FRAGMENT>
#define FLOAT_FRAGMENT fcoopmatNV<32, gl_ScopeSubgroup, FRAGMENT, FRAGMENT>

// Keys in the first KEY_TILE rows, values in the next; the query rows, in
// rounds, before the key loop.
shared uvec4 tile[2u * KEY_TILE * ROW_PIECES];
shared float scores_tile[SUBGROUPS * FRAGMENT * S_STRIDE];  // per subgroup: two O fragments
#if KEY_LIST
shared int tile_keys[KEY_TILE];
#endif

// Loads this invocation's share of the key and value rows of the KEY_TILE slots
// from slot0 into registers: invocation i's pieces k < KEY_PIECES are the keys'
// 16-byte pieces i + W k (row (i + W k) / CHUNKS of the tile, W the workgroup's
// size; none past TILE_PIECES, where W does not divide it), the rest the same
// pieces of the values.
void fetch_tile(uint list, uint kv_head, uint slot0, uint slot_end, out int tile_key[KEY_PIECES], out uvec4 pieces[PIECES]) {
  [[unroll]] for (uint k = 0u; k < KEY_PIECES; ++k) {
    const uint i = gl_LocalInvocationIndex + gl_WorkGroupSize.x * k, slot = slot0 + i / CHUNKS;
    tile_key[k] = i < TILE_PIECES && slot < slot_end ? slot_key(list, slot) : -1;
  }
  [[unroll]] for (uint k = 0u; k < PIECES; ++k) {
    const uint i = gl_LocalInvocationIndex + gl_WorkGroupSize.x * (k % KEY_PIECES);
    const int key = tile_key[k % KEY_PIECES];
    const uint at = (kv_head * pc.n_tokens + uint(max(key, 0))) * CHUNKS + i % CHUNKS;
    pieces[k] = key < 0 ? uvec4(0) : k < KEY_PIECES ? keys[at] : values_[at];
  }
}

void stage_key(uint row, int key) {
#if KEY_LIST
  tile_keys[row] = key;
#endif
}

// Whether the key at `column` of the tile from slot0 is visible to a row with
// that limit (KEY_LIST) or that end of its visible slots (dense: a key is its slot).
bool key_visible(uint slot0, uint column, uint row_limit, uint row_visible_end) {
#if KEY_LIST
  const int key = tile_keys[column];
  return key >= 0 && uint(key) < row_limit;
#else
  return slot0 + column < row_visible_end;
#endif
}

// The key loop over the tiles from FIRST to END (a multiple of KEY_TILE
// apart, or END = slot_end), each tile staged from the registers the previous
// one loaded, its next tile's loads issued (hidden behind this tile's work;
// one load latency a tile otherwise dominated it: docs/perf-experiments.md),
// then S = Q K^T on tensor cores, the online softmax and O += P V. MASKED
// compiles the causal mask in; tiles every row sees in full leave it out.
// A macro, not a function, so that the loop compiles as it did written
// inline: on the H100 this kernel moved by 5-25% with changes to the loop's
// shape that kept its work (docs/perf-experiments.md).
#define KEY_LOOP(FIRST, END, MASKED) \
  for (uint slot0 = FIRST; slot0 < END; slot0 += KEY_TILE) { \
    [[unroll]] for (uint k = 0u; k < PIECES; ++k) { \
      const uint i = tid + gl_WorkGroupSize.x * (k % KEY_PIECES), kk = i / CHUNKS, chunk = i % CHUNKS; \
      if (i >= TILE_PIECES) continue; \
      tile[((k < KEY_PIECES ? 0u : KEY_TILE) + kk) * ROW_PIECES + chunk] = next_pieces[k]; \
      if (k < KEY_PIECES && chunk == 0u) stage_key(kk, next_keys[k]); \
    } \
    barrier(); \
    if (slot0 + KEY_TILE < slot_end) fetch_tile(list, kv_head, slot0 + KEY_TILE, slot_end, next_keys, next_pieces); \
 \
    FLOAT_FRAGMENT s[KEY_BLOCKS]; \
    [[unroll]] for (uint j = 0u; j < KEY_BLOCKS; ++j) { \
      s[j] = FLOAT_FRAGMENT(0.0); \
      [[unroll]] for (uint b = 0u; b < D_BLOCKS; ++b) { \
        HALF_FRAGMENT k; \
        coopMatLoadNV(k, tile, j * FRAGMENT * ROW_PIECES + b * 2u, ROW_PIECES, true); /* K^T */ \
        s[j] = coopMatMulAddNV(q[b], k, s[j]); \
      } \
    } \
 \
    /* Element i of a fragment: row g + 8 (i / 4), column 2t + (i & 1) + 8 ((i / 2) & 1). */ \
    float tile_max[2] = {LOWEST_FLOAT, LOWEST_FLOAT}; \
    [[unroll]] for (uint j = 0u; j < KEY_BLOCKS; ++j) \
      [[unroll]] for (uint i = 0u; i < 8u; ++i) { \
        const uint column = j * FRAGMENT + 2u * t + (i & 1u) + 8u * ((i >> 1u) & 1u); \
        const bool visible = !MASKED || key_visible(slot0, column, limit[i >> 2u], visible_end[i >> 2u]); \
        const float score = visible ? s[j][i] * pc.scale_log2 : LOWEST_FLOAT; \
        s[j][i] = score; \
        tile_max[i >> 2u] = max(tile_max[i >> 2u], score); \
      } \
    float scale[2]; \
    [[unroll]] for (uint r = 0u; r < 2u; ++r) { \
      tile_max[r] = max(tile_max[r], subgroupShuffleXor(tile_max[r], 1u)); \
      tile_max[r] = max(tile_max[r], subgroupShuffleXor(tile_max[r], 2u)); \
      const float grown = max(row_max[r], tile_max[r]); \
      scale[r] = exp2(row_max[r] - grown); /* 1 where the max stays (LOWEST_FLOAT - LOWEST_FLOAT is 0) */ \
      row_max[r] = grown; \
      sum[r] *= scale[r]; \
    } \
    if (subgroupAny(scale[0] != 1.0 || scale[1] != 1.0)) \
      [[unroll]] for (uint b = 0u; b < D_BLOCKS; ++b) \
        [[unroll]] for (uint i = 0u; i < 8u; ++i) o[b][i] *= scale[i >> 2u]; \
 \
    [[unroll]] for (uint j = 0u; j < KEY_BLOCKS; ++j) { \
      HALF_FRAGMENT p; \
      [[unroll]] for (uint i = 0u; i < 8u; ++i) { \
        const float score = s[j][i]; \
        p[i] = float16_t(MASKED && score == LOWEST_FLOAT ? 0.0 : exp2(score - row_max[i >> 2u])); \
        sum[i >> 2u] += float(p[i]); /* the sum counts what P V multiplies */ \
      } \
      [[unroll]] for (uint b = 0u; b < D_BLOCKS; ++b) { \
        HALF_FRAGMENT v; \
        coopMatLoadNV(v, tile, (KEY_TILE + j * FRAGMENT) * ROW_PIECES + b * 2u, ROW_PIECES, false); \
        o[b] = coopMatMulAddNV(p, v, o[b]); \
      } \
    } \
    barrier(); \
  }

void main() {
  const uint tid = gl_LocalInvocationIndex, subgroup = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint split = gl_WorkGroupID.x, query_tile = gl_WorkGroupID.y;
  const uint list = gl_WorkGroupID.z / pc.head_blocks, block = gl_WorkGroupID.z % pc.head_blocks;
  const uint kv_head = list * pc.heads_per_list / (pc.n_heads / pc.n_kv_heads);

#if KEY_LIST
  // A sparse chunk's split is a few tiles (9 of QuoKA's at the bench's
  // shape), so its start counts: every round's query loads are issued before
  // any is staged, into registers the key loop's fragments do not hold yet
  // (H100 sparse chunk 37 -> 33.5 us). The dense chunk's loop, hundreds of
  // tiles, ran 23% slower in that form (213 registers against 204), so it
  // loads each round in its turn (docs/perf-experiments.md).
  uvec4 query_pieces[QUERY_PIECES];
  [[unroll]] for (uint k = 0u; k < QUERY_PIECES; ++k) {
    const uint i = tid + gl_WorkGroupSize.x * k;
    uint key_limit, output_row;
    tile_row(i / CHUNKS, query_tile, list, block, key_limit, output_row);
    query_pieces[k] = key_limit > 0u ? queries[output_row * CHUNKS + i % CHUNKS] : uvec4(0);
  }
#endif

  // The query rows pass through `tile` (2 * KEY_TILE rows) in rounds: one
  // round for 4 subgroups, two for 8.
  HALF_FRAGMENT q[D_BLOCKS];
#if KEY_LIST
  [[unroll]]  // the loads stayed where the stores are without it (no gain)
#endif
  for (uint first = 0u; first < ROWS; first += 2u * KEY_TILE) {
#if KEY_LIST
    [[unroll]] for (uint k = 0u; k < QUERY_PIECES; ++k) {
      const uint i = tid + gl_WorkGroupSize.x * k, staged = i / CHUNKS;
      if (staged >= first && staged < first + 2u * KEY_TILE) tile[(staged - first) * ROW_PIECES + i % CHUNKS] = query_pieces[k];
    }
#else
    for (uint i = tid; i < 2u * KEY_TILE * CHUNKS; i += gl_WorkGroupSize.x) {
      uint staged = i / CHUNKS, chunk = i % CHUNKS, key_limit, output_row;
      tile_row(first + staged, query_tile, list, block, key_limit, output_row);
      tile[staged * ROW_PIECES + chunk] = key_limit > 0u ? queries[output_row * CHUNKS + chunk] : uvec4(0);
    }
#endif
    barrier();
    const uint own = subgroup * FRAGMENT;
    if (own >= first && own < first + 2u * KEY_TILE) {
      [[unroll]] for (uint b = 0u; b < D_BLOCKS; ++b)
        coopMatLoadNV(q[b], tile, (own - first) * ROW_PIECES + b * 2u, ROW_PIECES, false);
    }
    barrier();
  }
  FLOAT_FRAGMENT o[D_BLOCKS];
  [[unroll]] for (uint b = 0u; b < D_BLOCKS; ++b) o[b] = FLOAT_FRAGMENT(0.0);

  // This lane's rows g and g + 8 of the subgroup's 16: keys [0, limit) are
  // causal for a row (0: no row); its running max and sum of P, in log2 units.
  const uint g = lane >> 2u, t = lane & 3u;
  uint limit[2], output_row[2];
  float row_max[2], sum[2];
  [[unroll]] for (uint r = 0u; r < 2u; ++r) {
    tile_row(subgroup * FRAGMENT + g + 8u * r, query_tile, list, block, limit[r], output_row[r]);
    row_max[r] = LOWEST_FLOAT;
    sum[r] = 0.0;
  }
  const uint region = subgroup * FRAGMENT * S_STRIDE;

#if KEY_LIST
  const uint slots = pc.list_length + pc.own_count;
#else
  // The tile's largest causal limit, that of its last query (tile_row): every
  // lane walking all ROWS rows for it, integer divisions each, took ~13k
  // cycles a workgroup (the H100's 8k dense chunk 138 -> 131 us without,
  // docs/perf-experiments.md).
  const uint slots = causal_limit(min(pc.n_queries, (query_tile + 1u) * pc.queries_per_tile) - 1u);
#endif
  const uint slot_begin = split * pc.split_keys;
  const uint slot_end = min(slot_begin + pc.split_keys, slots);
  // A dense row sees the split's keys below this (a key list's rows do not
  // use it). Its keys are their slots, so the mask needs no tile_keys: 16
  // shared-memory reads a lane a tile fewer took the H100's dense chunk from
  // 483-488 to 466-469 us at 32k (docs/perf-experiments.md).
  const uint visible_end[2] = {min(slot_end, limit[0]), min(slot_end, limit[1])};

  int next_keys[KEY_PIECES];
  uvec4 next_pieces[PIECES];
  if (slot_begin < slot_end) fetch_tile(list, kv_head, slot_begin, slot_end, next_keys, next_pieces);
#if KEY_LIST
  KEY_LOOP(slot_begin, slot_end, true)
#else
  // Every row sees every key of the split's tiles below its first query's
  // limit: those skip the mask (22 us of the H100's 32k dense chunk when
  // removed, docs/perf-experiments.md); the last tiles keep it.
  const uint seen_by_all = min(slot_end, causal_limit(query_tile * pc.queries_per_tile));
  const uint unmasked_end = seen_by_all > slot_begin ? slot_begin + (seen_by_all - slot_begin) / KEY_TILE * KEY_TILE : slot_begin;
  KEY_LOOP(slot_begin, unmasked_end, false)
  KEY_LOOP(unmasked_end, slot_end, true)
#endif

  [[unroll]] for (uint r = 0u; r < 2u; ++r) {
    sum[r] += subgroupShuffleXor(sum[r], 1u);
    sum[r] += subgroupShuffleXor(sum[r], 2u);
    if (limit[r] > 0u && t == 0u) partial_stats[output_row[r] * pc.n_splits + split] = vec2(row_max[r], sum[r]);
  }

  // O leaves through shared memory, two fragments (32 channels) at a time, in
  // 16-byte pieces, 8 lanes a row: a store instruction covers 4 rows' 128
  // contiguous bytes. (A lane storing its own row's 16 floats, 32 rows apart
  // in one instruction, cost ~9 us a dispatch on the H100:
  // docs/perf-experiments.md.)
  [[unroll]] for (uint b = 0u; b < D_BLOCKS; b += 2u) {
    coopMatStoreNV(o[b], scores_tile, region, S_STRIDE, false);
    coopMatStoreNV(o[b + 1u], scores_tile, region + FRAGMENT, S_STRIDE, false);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    [[unroll]] for (uint pass_ = 0u; pass_ < FRAGMENT / 4u; ++pass_) {
      const uint r = pass_ * 4u + (lane >> 3u), piece = lane & 7u;
      uint key_limit, destination_row;
      tile_row(subgroup * FRAGMENT + r, query_tile, list, block, key_limit, destination_row);
      if (key_limit > 0u) {
        const uint at = region + r * S_STRIDE + piece * 4u;
        const uint destination = ((destination_row * pc.n_splits + split) * HEAD_DIM + b * FRAGMENT) / 4u + piece;
        partial_output_pieces[destination] = vec4(scores_tile[at], scores_tile[at + 1u], scores_tile[at + 2u], scores_tile[at + 3u]);
      }
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
  }
}
