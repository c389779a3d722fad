// Push-constant layouts and binding slots shared by the GLSL kernels and their
// C++ owners, so the two sides cannot drift. Fields are 32-bit scalars only,
// which have the same offsets under std430 and C++.
#ifndef KVSCOPE_LAYOUTS_H
#define KVSCOPE_LAYOUTS_H

#ifdef __cplusplus
#include <cstdint>
namespace kv::layouts {
using uint = std::uint32_t;
#define KV_PUSH_STRUCT(name, fields) struct name { fields };
#else
// GLSL: each kernel declares its own block, `layout(push_constant) uniform N { FIELDS } pc;`.
#define KV_PUSH_STRUCT(name, fields)
#endif

// Element types of the attention inputs on the GPU (specialization constant).
#define ELEMENT_F16 0u
#define ELEMENT_BF16 1u
#define ELEMENT_F32 2u

// attention_partial.comp: one workgroup = (key split, query tile, KV head x head block).
// Writes unnormalised outputs and (max, sum) in log2 units per row and split.
#define ATTENTION_PARTIAL_FIELDS \
  uint n_heads;          /* H */ \
  uint n_kv_heads;       /* G */ \
  uint n_tokens;         /* T: tokens stored per head in q, k and v */ \
  uint n_queries;        /* query positions in the positions buffer */ \
  uint queries_per_tile; \
  uint heads_per_block;  \
  uint head_blocks;      /* ceil(r / heads_per_block) */ \
  uint split_keys;       /* keys per split, a multiple of KEY_TILE */ \
  uint n_splits;         \
  float scale_log2;      /* logit scale times log2(e) */
KV_PUSH_STRUCT(AttentionPartialPush, ATTENTION_PARTIAL_FIELDS)

// attention_merge.comp: one workgroup per (head, query) row.
#define ATTENTION_MERGE_FIELDS \
  uint n_rows;   /* H * n_queries */ \
  uint n_splits;
KV_PUSH_STRUCT(AttentionMergePush, ATTENTION_MERGE_FIELDS)

#ifdef __cplusplus
}  // namespace kv::layouts
#endif
#endif
