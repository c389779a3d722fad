// Bindings, push constants, loads and the key-list walk shared by the two
// attention partial kernels (attention_tile.glsl for chunks,
// attention_decode.glsl for one query); the C++ owner (engine/attention.cpp) binds both the same way.
// The including kernel defines KEY_LIST and includes load.glsl first.
layout(std430, binding = 0) readonly buffer Queries { uvec4 queries[]; };   // [H, n_queries, d]
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };         // [G, T, d]
layout(std430, binding = 2) readonly buffer Values { uvec4 values_[]; };    // [G, T, d]
layout(std430, binding = 3) writeonly buffer PartialOutput { float partial_output[]; };  // [H, n_queries, n_splits, d]
layout(std430, binding = 4) writeonly buffer PartialStats { vec2 partial_stats[]; };     // [H, n_queries, n_splits]
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
