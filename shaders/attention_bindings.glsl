// Bindings, push constants, loads and the key-list walk shared by the three
// attention partial kernels (attention_tile.glsl and attention_chunk.glsl for
// chunks, attention_decode.glsl for one query); the C++ owner
// (engine/kernels/attention.cpp) binds them all the same way.
// The including kernel defines KEY_LIST and includes load.glsl first.
layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };   // [H, n_queries, d]
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };         // [G, T, d]
layout(std430, binding = 2) readonly buffer Values { uvec4 values_[]; };    // [G, T, d]
// coherent: a decode step's last split reads the other splits' partials (attention_decode.glsl).
layout(std430, binding = 3) coherent buffer PartialOutput { float partial_output[]; };  // [H, n_queries, n_splits, d]
layout(std430, binding = 4) coherent buffer PartialStats { vec2 partial_stats[]; };     // [H, n_queries, n_splits]
#if KEY_LIST
layout(std430, binding = 5) readonly buffer Selection { int selection[]; };  // [lists, list_length], -1 padded
#endif

layout(push_constant) uniform AttentionPartialPush { ATTENTION_PARTIAL_FIELDS } pc;

DEFINE_LOAD8(load_query, queries)
DEFINE_LOAD8(load_key, keys)
DEFINE_LOAD8(load_value, values_)

// The key at `slot` of key list `list`, or -1. Dense: slot = position. Sparse:
// the selected positions, then the chunk's own keys.
int slot_key(uint list, uint slot) {
#if KEY_LIST
  if (slot < pc.list_length) return selection[list * pc.list_length + slot];
  uint own = slot - pc.list_length;
  return own < pc.own_count ? int(pc.own_first + own) : -1;
#else
  return int(slot);
#endif
}

// The causal limit of the chunk's query `query`: keys [0, limit) are visible to it.
uint causal_limit(uint query) { return pc.first_position + query + 1u; }

// Row `row` of a chunk kernel's tile (attention_tile.glsl, attention_chunk.glsl):
// heads_per_block heads x queries_per_tile queries. `output_row` is where its
// results go, (head * n_queries + query); `key_limit` its causal limit (keys
// [0, limit) are visible), 0 for a row past the heads or queries.
void tile_row(uint row, uint query_tile, uint list, uint block, out uint key_limit, out uint output_row) {
  uint head_in_block = row / pc.queries_per_tile;
  uint head_in_list = block * pc.heads_per_block + head_in_block;
  uint query = query_tile * pc.queries_per_tile + row % pc.queries_per_tile;
  bool valid = head_in_block < pc.heads_per_block && head_in_list < pc.heads_per_list && query < pc.n_queries;
  key_limit = valid ? causal_limit(query) : 0u;
  output_row = (list * pc.heads_per_list + head_in_list) * pc.n_queries + query;
}
