#include "methods/table.h"

#include <algorithm>
#include <cmath>

#include "../shaders/layouts.h"
#include "base/error.h"

namespace kv {

// Each method's factory, defined in its own file.
std::unique_ptr<Method> make_oracle(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t);
std::unique_ptr<Method> make_quoka(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t);
std::unique_ptr<Method> make_quest(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t);
std::unique_ptr<Method> make_fier(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t);
std::unique_ptr<Method> make_streaming(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t);
std::unique_ptr<Method> make_keydiff(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t);
std::unique_ptr<Method> make_tova(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t);
std::unique_ptr<Method> make_sparq(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t);
std::unique_ptr<Method> make_loki(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t);
std::unique_ptr<Method> make_snapkv(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t);
std::unique_ptr<Method> make_h2o(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t);
std::unique_ptr<Method> make_sample_attention(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t);
std::unique_ptr<Method> make_lessismore(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t);
LayerRole lessismore_layer_role(uint32_t layer, const MethodOptions& options);

namespace {

Granularity per_kv_head(const MethodOptions&, Mode) { return Granularity::kv_head; }
Granularity per_query_head(const MethodOptions&, Mode) { return Granularity::query_head; }
Granularity per_head_unless_aggregated(const MethodOptions& o, Mode) { return aggregate_granularity(o.gqa_agg); }
// The oracle's set is per query head in decode; a prefill chunk's is per KV
// head, as QuoKA's (docs/methods.md).
Granularity oracle_granularity(const MethodOptions&, Mode mode) {
  return mode == Mode::decode ? Granularity::query_head : Granularity::kv_head;
}

// The byte models below count what each stage must read at least (fp32 scratch);
// a stage whose repeated reads should hit the cache counts its input once.
double keys_once(const StageSizes& s) { return s.shape.kv_heads * double(s.candidates) * s.kv_row(); }
double queries_once(const StageSizes& s) { return s.shape.heads * double(s.queries) * s.kv_row(); }

double no_own_stages(const std::string&, const StageSizes&) { return -1; }

double lessismore_bytes(const std::string& stage, const StageSizes& s) {
  if (stage == "scores") return keys_once(s);
  if (stage == "rank") return s.shape.heads * double(s.budget) * 8;  // each head's ranked keys and their scores
  return -1;
}

double quoka_bytes(const std::string& stage, const StageSizes& s) {
  if (stage == "mean_query" || stage == "query_cosine") return queries_once(s);
  if (stage == "key_scores") return keys_once(s);
  return -1;
}

double quest_bytes(const std::string& stage, const StageSizes& s) {
  const double pages = double(s.candidates) / s.options.page_size;
  if (stage == "page_scores") return s.shape.kv_heads * pages * 2 * s.shape.dim * s.element;  // bounds, stored type
  if (stage == "topk") return s.list_rows * pages * 4;  // its top-k ranks pages
  return -1;
}

double fier_bytes(const std::string& stage, const StageSizes& s) {
  const double G = s.shape.kv_heads, n = s.candidates, d = s.shape.dim;
  if (stage == "approx_scores") return G * n * d / 8 + G * (n / s.options.group_size) * d * 4;  // bits, fp32 scales
  return -1;
}

double key_pass_bytes(const std::string& stage, const StageSizes& s) {
  if (stage == "key_scores" || stage == "key_sums") return keys_once(s);
  return -1;
}

double sparq_bytes(const std::string& stage, const StageSizes& s) {
  // Each KV head's keys on the 16-byte pieces its heads keep, at most all of them.
  const double d = s.shape.dim;
  const double kept = std::min(d, s.shape.group() * std::ceil(std::min<double>(s.options.sparq_r, d) / 8) * 8);
  if (stage == "partial_scores") return s.shape.kv_heads * double(s.candidates) * kept * s.element;
  return -1;
}

double loki_bytes(const std::string& stage, const StageSizes& s) {
  const double r = std::min<double>(s.options.loki_r, s.shape.dim);
  if (stage == "subspace_scores") return s.shape.kv_heads * double(s.candidates) * r * 4;
  return -1;
}

double window_bytes(const std::string& stage, const StageSizes& s) {
  if (stage == "window_row_stats" || stage == "window_scores") return keys_once(s);
  return -1;
}

const std::vector<Mode> kDecodeBench{Mode::decode};
const std::vector<Mode> kBothBench{Mode::decode, Mode::prefill};

const std::vector<MethodSpec> kMethods = {
    {.name = "oracle", .summary = "the budget keys of most dense attention mass (the reference, not a method)",
     .make = make_oracle, .granularity = oracle_granularity,
     .stage_bytes = no_own_stages, .color = {240, 240, 240}},
    {.name = "quoka", .summary = "queries least like the chunk's mean score keys by cosine (QuoKA)",
     .make = make_quoka, .granularity = per_kv_head, .options = {"n-q", "quoka-group"},
     .bench_regimes = kBothBench,
     .stage_bytes = quoka_bytes, .color = {80, 200, 255}},
    {.name = "quest", .summary = "pages ranked by a bound on q.k from their min/max keys (Quest)",
     .make = make_quest, .granularity = per_head_unless_aggregated, .options = {"page-size", "gqa-agg"},
     .bench_regimes = kBothBench,
     .stage_bytes = quest_bytes, .color = {255, 170, 60}},
    {.name = "fier", .summary = "every key's q.k estimated from 1-bit keys (Fier)",
     .make = make_fier, .granularity = per_head_unless_aggregated, .options = {"group-size", "gqa-agg"},
     .bench_regimes = kDecodeBench,
     .stage_bytes = fier_bytes, .color = {190, 120, 255}},
    {.name = "streaming", .summary = "the first keys and the most recent ones (StreamingLLM)",
     .make = make_streaming, .granularity = per_kv_head, .options = {"n-sink"},
     .stage_bytes = no_own_stages, .color = {150, 150, 150}},
    {.name = "keydiff", .summary = "keys least like the mean key (KeyDiff)",
     .make = make_keydiff, .granularity = per_kv_head,
     .bench_regimes = kDecodeBench,
     .stage_bytes = key_pass_bytes, .color = {255, 110, 170}},
    {.name = "tova", .summary = "keys of most attention from the current query, summed over the group (TOVA)",
     .make = make_tova, .granularity = per_kv_head,
     .bench_regimes = kDecodeBench,
     .stage_bytes = key_pass_bytes, .color = {120, 230, 160}},
    {.name = "sparq", .summary = "q.k estimated on the query's largest components (SparQ)",
     .make = make_sparq, .granularity = per_query_head, .options = {"sparq-r"},
     .bench_regimes = kDecodeBench,
     .stage_bytes = sparq_bytes, .color = {230, 230, 90}},
    {.name = "loki", .summary = "q.k estimated in the keys' principal subspace (Loki)",
     .make = make_loki, .granularity = per_query_head, .options = {"loki-r"},
     .bench_regimes = kDecodeBench, .builds_from_whole_cache = true,
     .stage_bytes = loki_bytes, .color = {90, 220, 220}},
    {.name = "snapkv", .summary = "attention of the last window of queries, pooled (SnapKV)",
     .make = make_snapkv, .granularity = per_kv_head, .options = {"snap-window", "snap-pool"},
     .bench_regimes = kDecodeBench, .reads_past_queries = true,
     .stage_bytes = window_bytes, .color = {255, 140, 100}},
    {.name = "h2o", .summary = "attention summed over every past query, half the budget recent (H2O)",
     .make = make_h2o, .granularity = per_kv_head,
     .bench_regimes = kDecodeBench, .reads_past_queries = true, .quadratic = true,
     .stage_bytes = window_bytes, .color = {140, 160, 255}},
    {.name = "sampleattention", .summary = "attention of strided sampled queries (SampleAttention)",
     .make = make_sample_attention, .granularity = per_kv_head, .options = {"sample-queries", "sample-stride"},
     .bench_regimes = kDecodeBench, .reads_past_queries = true,
     .stage_bytes = window_bytes, .color = {200, 170, 120}},
    {.name = "lessismore", .summary = "one set for every head, chosen at a few layers and reused by the next (LessIsMore)",
     .make = make_lessismore, .granularity = per_kv_head, .options = {"lim-start", "lim-correction", "lim-window"},
     .bench_regimes = kDecodeBench,
     .stage_bytes = lessismore_bytes, .color = {255, 215, 0}, .layer_role = lessismore_layer_role},
};

std::string known_methods() {
  std::string known = "dense";
  for (const MethodSpec& m : kMethods) known += std::string(", ") + m.name;
  return known;
}

}  // namespace

const std::vector<MethodSpec>& method_table() { return kMethods; }

bool is_method(const std::string& name) {
  return std::any_of(kMethods.begin(), kMethods.end(), [&](const MethodSpec& m) { return name == m.name; });
}

const MethodSpec& find_method(const std::string& name) {
  for (const MethodSpec& m : kMethods)
    if (name == m.name) return m;
  throw InputError("unknown method '" + name + "' (known: " + known_methods() + ")");
}

std::unique_ptr<Method> make_method(const vk::Device& device, const GpuLayer& layer, const std::string& name,
                                    const MethodOptions& options, Mode mode, uint32_t max_queries) {
  return find_method(name).make(device, layer, options, mode, max_queries);
}

LayerRole layer_role(const MethodSpec& spec, uint32_t layer, const MethodOptions& options) {
  return spec.layer_role ? spec.layer_role(layer, options) : LayerRole::own;
}

uint32_t selecting_layer(const MethodSpec& spec, uint32_t layer, const MethodOptions& options) {
  for (uint32_t l = layer + 1; l-- > 0;) {
    const LayerRole role = layer_role(spec, l, options);
    if (role == LayerRole::own || role == LayerRole::select) return l;
    if (role == LayerRole::dense) return layer;
  }
  return layer;
}

Granularity aggregate_granularity(HeadAggregate aggregate) {
  return aggregate == HeadAggregate::head ? Granularity::query_head : Granularity::kv_head;
}

uint32_t aggregate_code(HeadAggregate aggregate) {
  return aggregate == HeadAggregate::head ? AGGREGATE_HEAD : aggregate == HeadAggregate::max ? AGGREGATE_MAX : AGGREGATE_MEAN;
}

}  // namespace kv
