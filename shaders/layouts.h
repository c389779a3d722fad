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

// attention_partial.comp / sparse_attention_partial.comp: one workgroup =
// (key split, query tile, key list x head block). A key list is shared by
// `heads_per_list` consecutive query heads (dense and per-KV-head selections:
// the group size r; per-query-head selections: 1). Writes unnormalised outputs
// and (max, sum) in log2 units per row and split, for attention_merge.
#define ATTENTION_PARTIAL_FIELDS \
  uint n_heads;          /* H */ \
  uint n_kv_heads;       /* G */ \
  uint n_tokens;         /* T: tokens stored per head in k and v */ \
  uint n_queries;        /* queries per head in the queries buffer */ \
  uint first_position;   /* query i is at position first_position + i */ \
  uint queries_per_tile; \
  uint heads_per_list;   \
  uint heads_per_block;  \
  uint head_blocks;      /* ceil(heads_per_list / heads_per_block) */ \
  uint split_keys;       /* key slots per split, a multiple of KEY_TILE */ \
  uint n_splits;         \
  float scale_log2;      /* logit scale times log2(e) */ \
  uint list_length;      /* sparse: selected slots per list (-1 padded) */ \
  uint own_first;        /* sparse: the chunk's own keys [own_first, own_first + own_count) */ \
  uint own_count;        \
  uint merge_here;       /* decode: the last split of a row to finish merges the row (attention_decode.glsl) */
KV_PUSH_STRUCT(AttentionPartialPush, ATTENTION_PARTIAL_FIELDS)

// attention_chunk.glsl's tiling (tensor cores): KEY_TILE keys a step for 16
// (head, query) rows a subgroup, and the row stride (floats) of a subgroup's
// region of shared memory through which its O leaves, padded against bank
// conflicts.
// engine/kernels/attention.cpp sizes the kernel's shared memory from them.
#define ATTENTION_CHUNK_KEY_TILE 32u
#define ATTENTION_CHUNK_S_STRIDE (ATTENTION_CHUNK_KEY_TILE + 8u)

// attention_merge.comp and, for at most ATTENTION_FEW_SPLITS splits,
// attention_merge_few.comp: one workgroup per (head, query) row.
#define ATTENTION_FEW_SPLITS 8u
#define ATTENTION_MERGE_FIELDS \
  uint n_rows;   /* H * n_queries */ \
  uint n_splits;
KV_PUSH_STRUCT(AttentionMergePush, ATTENTION_MERGE_FIELDS)

// The top-k kernels: per row, the `k` largest of `n` scores (ties toward the
// lower index), written as ascending indices padded with -1 to `out_stride`.
// A row of at most TOPK_ROW_MAX is topk_row.comp's (one workgroup); a longer
// one is topk_long.comp's: slices of TOPK_SLICE, one or more a workgroup,
// gather the keys at or above a threshold found from a sample of TOPK_SAMPLE
// keys, and the row's last workgroup selects among them. Histograms of
// TOPK_BINS.
#define TOPK_ROW_MAX 8192u
#define TOPK_SLICE 4096u
#define TOPK_MAX_SLICES 256u  /* longer rows (over 1M scores) are read by one workgroup */
#define TOPK_SAMPLE 4096u
// topk_long's sample is TOPK_SAMPLE / 4 vec4s of a row, each inside it: of a
// row's `inside` vec4s that hold no key of another row, vector j of the sample
// is the TOPK_SAMPLE_VECTOR(j, inside)-th. It lies in stretch j of them, [j
// inside / (TOPK_SAMPLE / 4), (j + 1) inside / (TOPK_SAMPLE / 4)), at a place
// scrambled from j, so that the sample is spread evenly yet not in step with
// any period of the row's positions. Unsigned 32-bit arithmetic in both
// languages (j inside itself could overflow).
#define TOPK_SAMPLE_VECTORS (TOPK_SAMPLE / 4u)
#define TOPK_STRETCH_START(j, inside) \
  ((j) * ((inside) / TOPK_SAMPLE_VECTORS) + (j) * ((inside) % TOPK_SAMPLE_VECTORS) / TOPK_SAMPLE_VECTORS)
#define TOPK_SAMPLE_VECTOR(j, inside) \
  (TOPK_STRETCH_START(j, inside) + (((j) * 0x9e3779b9u) >> 12u) % (TOPK_STRETCH_START((j) + 1u, inside) - TOPK_STRETCH_START(j, inside)))
#define TOPK_BINS 2048u
#define TOPK_KEPT_PAGES 128u  /* a Quest row's pages whose tokens all invocations write: budget 2048 in pages of 16 */
#define TOPK_FIELDS \
  uint n;           /* candidates per row */ \
  uint k;           \
  uint row_stride;  /* scores per row in the buffer */ \
  uint out_stride;  /* indices per row in the output */ \
  uint slices;      /* topk_long: slices per row (0: one workgroup reads the row) */ \
  /* candidates are pages of page_size tokens (0: not pages), written as */ \
  /* Quest's token list over n_tokens tokens (TopK::record_pages) */ \
  uint page_size;   \
  uint n_tokens;    \
  /* topk_long: the keys of the sample its threshold must reach, at least */ \
  /* and at most, and the entries a row's gathered list holds */ \
  uint sample_rank; \
  uint sample_reach; \
  uint list_capacity;
KV_PUSH_STRUCT(TopKPush, TOPK_FIELDS)
// A long row's select state, one uint word per row, zero between uses: the
// keys its workgroups gathered (at most TOPK_MAX_SLICES * TOPK_SLICE, under
// TOPK_STATE_ARRIVAL) plus TOPK_STATE_ARRIVAL for each that has finished.
#define TOPK_STATE_ARRIVAL (1u << 21u)
#define TOPK_STATE_WORDS 1u

// mean_query.comp: [H, n, d] (storage dtype) -> [H, d] float, the mean over n.
#define MEAN_QUERY_FIELDS \
  uint n_heads; \
  uint n_queries;
KV_PUSH_STRUCT(MeanQueryPush, MEAN_QUERY_FIELDS)

// Score kernels write scores[row * row_stride + candidate] for candidates [0, n_candidates).
// `heads_per_row`: 1 = one query head per row; r = the row aggregates the group's heads.
#define AGGREGATE_HEAD 0u
#define AGGREGATE_MAX 1u
#define AGGREGATE_MEAN 2u

// oracle_decode_scores.comp: scale * q_h . k_j per query head.
// oracle_prefill_scores.comp: sum over the group's heads and the chunk's queries of p_{h,i,j}.
// tova_scores.comp: the layer's mean of the last query's p_{h,i,j}, on every KV head's row.
#define ORACLE_SCORES_FIELDS \
  uint n_heads; \
  uint n_kv_heads; \
  uint n_tokens; \
  uint n_queries; \
  uint n_candidates; \
  uint row_stride; \
  float scale; \
  uint slice_first;  /* oracle_prefill_scores.comp: (head, query) rows [slice_first, slice_first + slice_count), */ \
  uint slice_count;  /* a multiple of ORACLE_QUERY_TILE; a slice after the first adds to the scores (loop limits) */
KV_PUSH_STRUCT(OracleScoresPush, ORACLE_SCORES_FIELDS)
#define ORACLE_QUERY_TILE 16u

// The QuoKA kernels: quoka_query_cosine.comp (steps 1-3, chunks of more than
// n_keep queries), quoka_aggregate.comp (steps 2-3, the others) and the key
// kernels (step 4: per KV head, max over aggregated kept queries of a . k_hat_j).
#define QUOKA_FIELDS \
  uint n_heads; \
  uint n_kv_heads; \
  uint n_tokens; \
  uint n_queries; \
  uint n_keep;        /* kept queries per head: min(n_queries, N_Q) */ \
  uint aggregate_max; /* 0: mean over the group by rank; 1: every kept query of the group */ \
  uint n_candidates; \
  uint row_stride;
KV_PUSH_STRUCT(QuokaPush, QUOKA_FIELDS)

// quest_page_minmax.comp: per KV head and page in [first_page, end_page): channel min and max.
#define PAGE_MINMAX_FIELDS \
  uint n_kv_heads; \
  uint n_tokens;    /* tokens per head in the key buffer (its stride) */ \
  uint n_valid;     /* tokens [0, n_valid) exist: the cache's length */ \
  uint page_size; \
  uint n_pages;     /* pages per head in the output */ \
  uint first_page; \
  uint end_page;
KV_PUSH_STRUCT(PageMinMaxPush, PAGE_MINMAX_FIELDS)

// quest_page_scores.comp: u_p = sum_c max(q_c M_p[c], q_c m_p[c]) for pages [0, n_candidates).
#define PAGE_SCORES_FIELDS \
  uint n_heads; \
  uint n_kv_heads; \
  uint n_pages; \
  uint n_candidates; \
  uint row_stride; \
  uint heads_per_row; \
  uint aggregate; \
  uint raw_query;  /* head_query.glsl */
KV_PUSH_STRUCT(PageScoresPush, PAGE_SCORES_FIELDS)

// fier_quantize_keys.comp: per KV head and token block in [first_block, end_block) of
// group_size tokens: fp16 (lo, hi) per channel and one bit per token and channel.
#define FIER_QUANTIZE_FIELDS \
  uint n_kv_heads; \
  uint n_tokens;    /* tokens per head in the key buffer (its stride) */ \
  uint n_valid;     /* tokens [0, n_valid) exist: the cache's length */ \
  uint group_size; \
  uint n_blocks;    /* blocks per head in the output */ \
  uint first_block; \
  uint end_block;
KV_PUSH_STRUCT(FierQuantizePush, FIER_QUANTIZE_FIELDS)

// fier_approx_scores.comp: q . k_tilde_j from the packed bits and block (lo, hi),
// quantising the block fresh_block (the one holding the last candidate) first,
// over the candidates; FIER_NO_FRESH_BLOCK for none.
#define FIER_NO_FRESH_BLOCK 0xffffffffu
#define FIER_SCORES_FIELDS \
  uint n_heads; \
  uint n_kv_heads; \
  uint n_tokens; \
  uint group_size; \
  uint n_blocks; \
  uint n_candidates; \
  uint row_stride; \
  uint heads_per_row; \
  uint aggregate; \
  uint raw_query;  /* head_query.glsl */ \
  uint fresh_block;
KV_PUSH_STRUCT(FierScoresPush, FIER_SCORES_FIELDS)

// streaming_indices.comp: the first n_sink and the last budget - n_sink candidates.
#define STREAMING_FIELDS \
  uint n_rows; \
  uint n_candidates; \
  uint budget; \
  uint n_sink;
KV_PUSH_STRUCT(StreamingPush, STREAMING_FIELDS)

// keydiff_key_sums.comp: per (KV head, split of KEYDIFF_SPLIT candidates), the
// sum of the unit-normalised keys; keydiff_anchor.comp adds the splits up into
// the anchor [G, d]; keydiff_scores.comp scores -cos(k_j, anchor).
#define KEYDIFF_SPLIT 256u
#define KEYDIFF_FIELDS \
  uint n_kv_heads;   \
  uint n_tokens;     \
  uint n_candidates; \
  uint n_splits;     \
  uint row_stride;
KV_PUSH_STRUCT(KeyDiffPush, KEYDIFF_FIELDS)

// sparq_kept_query.comp: per KV head and pass of four query heads, their
// queries on the r channels of the largest |q_c| (ties toward the lower
// channel), 0 elsewhere; sparq_scores.comp: per query head, q . k_j over them.
#define SPARQ_FIELDS \
  uint n_heads;      \
  uint n_kv_heads;   \
  uint n_tokens;     \
  uint n_candidates; \
  uint row_stride;   \
  uint r;            \
  uint raw_query;  /* head_query.glsl */
KV_PUSH_STRUCT(SparqPush, SPARQ_FIELDS)

// LessIsMore (methods/lessismore.cpp): lessismore_scores.comp scores the keys
// before the recency window for every query head (and clears the unified
// ranks), lessismore_rank.comp ranks each head's top keys and keeps each key's
// first (rank, head) as an orderable float, lessismore_finish.comp appends the
// window and copies the set to every KV head's row.
#define LESSISMORE_SCORES_FIELDS \
  uint n_heads;    \
  uint n_kv_heads; \
  uint n_tokens;   \
  uint n_scored;   /* candidates before the window */ \
  uint row_stride; \
  uint raw_query;  /* head_query.glsl */ \
  float scale;
KV_PUSH_STRUCT(LessIsMoreScoresPush, LESSISMORE_SCORES_FIELDS)
#define LESSISMORE_RANK_FIELDS \
  uint n_heads;    \
  uint n_ranked;   /* m: keys a head ranks */ \
  uint row_stride; /* of the scores */
KV_PUSH_STRUCT(LessIsMoreRankPush, LESSISMORE_RANK_FIELDS)
// The most keys a head ranks: lessismore_rank.comp sorts them in shared memory.
#define LESSISMORE_MAX_RANKED 4096u
#define LESSISMORE_FINISH_FIELDS \
  uint n_rows;       \
  uint width;        /* the list's row stride: the budget */ \
  uint n_ranked;     /* m entries of row 0, from the unified top-k */ \
  uint n_window;     \
  uint first_window; /* the window's first position */
KV_PUSH_STRUCT(LessIsMoreFinishPush, LESSISMORE_FINISH_FIELDS)

// window_row_stats.comp, window_lse.comp and window_scores.comp (SnapKV, H2O,
// SampleAttention): the dense attention of the window queries window_first +
// i * window_stride, i < window_count, each over its causal keys; summed over a
// KV head's query heads and the window per candidate key [0, n_candidates).
#define WINDOW_FIELDS \
  uint n_heads;      \
  uint n_kv_heads;   \
  uint n_tokens;     \
  uint window_first; \
  uint window_count; \
  uint window_stride; \
  uint n_candidates; \
  uint row_stride;   \
  float scale_log2;  \
  uint pool;         /* snapkv_pool.comp: the average-pooling kernel size, odd */ \
  uint n_splits;     /* window_row_stats.comp: each row's keys in n_splits splits of split_keys (a multiple of 64) */ \
  uint split_keys;
KV_PUSH_STRUCT(WindowPush, WINDOW_FIELDS)

// recent_keys.comp: after a top-k of the heavy keys, the `recent` candidates
// [first_recent, first_recent + recent) from slot heavy_count on, then -1 to budget.
#define RECENT_FIELDS \
  uint n_rows;       \
  uint budget;       \
  uint heavy_count;  \
  uint first_recent; \
  uint recent;
KV_PUSH_STRUCT(RecentPush, RECENT_FIELDS)

// loki_project_keys.comp (once per cache): K~ = U K^T with the basis U [G,
// rank, d], in tiles of LOKI_TILE tokens: [G, ceil(T / LOKI_TILE), rank,
// LOKI_TILE] floats, so that the tile loki_scores.comp reads at a time is one
// contiguous run; loki_project_query.comp: per KV head and pass of four query
// heads, U q; loki_scores.comp: per query head, (U q) . K~_j over the candidates.
#define LOKI_MAX_BASIS 8192u /* rank x d floats in shared memory */
#define LOKI_TILE 128u
#define LOKI_PROJECTED_AT(kv_head, component, token, rank, n_tokens) \
  ((((kv_head) * (((n_tokens) + LOKI_TILE - 1u) / LOKI_TILE) + (token) / LOKI_TILE) * (rank) + (component)) * LOKI_TILE + \
   (token) % LOKI_TILE)
#define LOKI_FIELDS \
  uint n_heads;      \
  uint n_kv_heads;   \
  uint n_tokens;     \
  uint n_candidates; \
  uint row_stride;   \
  uint rank;         \
  uint raw_query;  /* head_query.glsl */
KV_PUSH_STRUCT(LokiPush, LOKI_FIELDS)

// selection_metrics.comp: per query head, coverage and output error (means over
// the block's queries), recall of the selection against the oracle's, and the
// fraction of the needle's candidate tokens selected (-1 when it has none).
#define METRICS_FIELDS \
  uint n_heads; \
  uint n_queries; \
  uint selection_stride; \
  uint selection_heads_per_row; \
  uint oracle_stride; \
  uint oracle_heads_per_row; \
  uint needle_first;  /* needle tokens [needle_first, needle_end); empty: no needle */ \
  uint needle_end; \
  uint n_candidates;
KV_PUSH_STRUCT(MetricsPush, METRICS_FIELDS)

// query_stats.comp: one workgroup per query of a chunk, one head (the viewer's
// cosine panel). Query i sits at position first_position + i and attends to
// keys [0, first_position + i].
#define QUERY_STATS_FIELDS \
  uint n_queries;      \
  uint n_tokens;       /* T: tokens stored per KV head in k */ \
  uint kv_head;        \
  uint first_position; \
  uint row_stride;     /* probabilities per query in the scratch buffer */ \
  float scale_log2;    \
  float mass;          /* the fraction of attention mass to reach, 0.9 */
KV_PUSH_STRUCT(QueryStatsPush, QUERY_STATS_FIELDS)

// stream_read.comp: reads n_vectors uvec4s.
#define STREAM_READ_FIELDS \
  uint n_vectors;
KV_PUSH_STRUCT(StreamReadPush, STREAM_READ_FIELDS)

// loop_probe.comp (tests): a loop of outer x inner iterations.
#define LOOP_PROBE_FIELDS \
  uint outer; \
  uint inner;
KV_PUSH_STRUCT(LoopProbePush, LOOP_PROBE_FIELDS)

// The model runner's kernels (engine/model/): activations are fp32 rows
// [n_tokens, width]; weights and the KV cache are in the model's storage type.

// model_embed.comp: x[t] = embedding[tokens[first_token + t]] (a decode step
// reads the token the step before chose, where it wrote it).
#define MODEL_EMBED_FIELDS \
  uint n_tokens; \
  uint hidden; \
  uint first_token;
KV_PUSH_STRUCT(ModelEmbedPush, MODEL_EMBED_FIELDS)

// model_rmsnorm.comp: y[t] = x[first_token + t] / sqrt(mean(x^2) + eps) * weight,
// a workgroup a token.
#define MODEL_RMSNORM_FIELDS \
  uint n_tokens; \
  uint first_token; \
  uint hidden; \
  float eps; \
  uint half_output;  /* y as fp16 (a tensor-core linear layer's input) */
KV_PUSH_STRUCT(ModelRmsNormPush, MODEL_RMSNORM_FIELDS)

// model_matmul.comp: y[t, r] (+)= sum_k W[r, k] x[t, k] (+ bias[r]), a workgroup
// a tile of rows by tokens (specialization constants). With input_head_dim > 0
// the input is head-major, as attention leaves it: x[t, k] at
// ((k / d) * n_tokens + t) * d + k % d. model_matmul_matrix.comp may split
// the input channels in k_splits slices (workgroup z), each writing its partial
// sums [k_splits, n_tokens, n_out] for model_matmul_splits.comp to add up.
#define MODEL_MATMUL_FIELDS \
  uint n_tokens; \
  uint n_in;     /* even for 16-bit weights */ \
  uint n_out; \
  uint accumulate;  /* 1: add to y (a residual) */ \
  uint has_bias; \
  uint input_head_dim; \
  uint k_splits;   /* model_matmul_matrix: slices of the input channels; others 1 */ \
  uint split_channels;  /* input channels a slice, a multiple of the kernel's step */
KV_PUSH_STRUCT(ModelMatmulPush, MODEL_MATMUL_FIELDS)

// model_matvec.comp: a decode step's linear layers, one token. Rows
// [0, rows0) come from W0 into y0, the next rows1 from W1 into y1, the next
// rows2 from W2 into y2 (q, k and v in one dispatch); gated: rows0 rows of W0
// and of W1, y0 = silu(W0 x) * (W1 x) (SwiGLU's gate and up). With norm the
// input is RMSNorm(x) * norm_weight, taken on the way.
#define MODEL_MATVEC_FIELDS \
  uint n_in; \
  uint rows0; \
  uint rows1; \
  uint rows2; \
  uint accumulate; /* 1: add to y (a residual) */ \
  uint has_bias;   /* bias0..2 read */ \
  uint gated; \
  uint norm; \
  float eps; \
  uint head_dim; \
  uint position; \
  uint capacity; \
  uint interleaved; \
  uint keep_queries;
KV_PUSH_STRUCT(ModelMatvecPush, MODEL_MATVEC_FIELDS)

// model_rope.comp: rotates the projected q and k of tokens at positions
// first_position + t by the cos/sin table [positions, d / 2], writes q as the
// attention's queries [H, n_tokens, d] and k, v into the cache [G, capacity, d],
// in the storage type.
#define MODEL_ROPE_FIELDS \
  uint n_tokens; \
  uint n_heads; \
  uint n_kv_heads; \
  uint head_dim; \
  uint first_position; \
  uint capacity; \
  uint interleaved;  /* pairs (2i, 2i + 1), else (i, i + d / 2) */ \
  uint keep_queries; /* also write q at its position of kept_queries [H, capacity, d] (a capture) */
KV_PUSH_STRUCT(ModelRopePush, MODEL_ROPE_FIELDS)

// model_swiglu.comp: h[t, i] = silu(gate[t, i]) * up[t, i], fp32 or fp16.
#define MODEL_SWIGLU_FIELDS \
  uint count;  /* even */ \
  uint half_output;
KV_PUSH_STRUCT(ModelSwigluPush, MODEL_SWIGLU_FIELDS)

// model_argmax.comp: the first index of the largest logit, into chosen[slot]
// (the position it follows), one workgroup.
#define MODEL_ARGMAX_FIELDS \
  uint n; \
  uint slot;
KV_PUSH_STRUCT(ModelArgmaxPush, MODEL_ARGMAX_FIELDS)

// model_random_fill.comp: element i of a tensor of random weights is
// (hash(key, i) >> 24, a signed byte) * 2^-12, exact in every storage type
// (engine/model/random_weights.cpp is its host twin).
#define MODEL_RANDOM_FILL_FIELDS \
  uint words;   /* 32-bit words of the tensor */ \
  uint key;     /* the seed and the tensor's index, mixed */
KV_PUSH_STRUCT(ModelRandomFillPush, MODEL_RANDOM_FILL_FIELDS)

// model_dequantize.comp: a matrix of ggml blocks widened to fp16, eight values a piece.
#define MODEL_DEQUANTIZE_FIELDS \
  uint pieces;  /* the matrix's values / 8 */
KV_PUSH_STRUCT(ModelDequantizePush, MODEL_DEQUANTIZE_FIELDS)

#ifdef __cplusplus
}  // namespace kv::layouts
#endif
#endif
