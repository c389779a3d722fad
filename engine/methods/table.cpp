#include "methods/table.h"

#include <algorithm>
#include <cmath>

#include "../shaders/layouts.h"
#include "error.h"

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

namespace {

// Getters and setters of the option table: one pair per MethodOptions field.
#define KV_OPTION_FIELD(field)                                  \
  .get = [](const MethodOptions& o) { return uint32_t(o.field); }, \
  .set = [](MethodOptions& o, uint32_t v) { o.field = decltype(MethodOptions::field)(v); }

const std::vector<OptionSpec> kOptions = {
    {.flag = "page-size", .help = "keys a page (quest)",
     .lowest = 1, .highest = 65536, .viewer_lowest = 4, .viewer_highest = 64, KV_OPTION_FIELD(page_size)},
    {.flag = "group-size", .help = "tokens whose keys share a (lo, hi) per channel (fier)",
     .lowest = 1, .highest = 65536, .viewer_lowest = 8, .viewer_highest = 128, KV_OPTION_FIELD(group_size)},
    {.flag = "n-q", .help = "queries kept, least like the chunk's mean (quoka)",
     .lowest = 1, .highest = 4096, .viewer_lowest = 1, .viewer_highest = 64, KV_OPTION_FIELD(n_q)},
    {.flag = "quoka-group", .help = "how a KV head's query heads combine their key scores (quoka)",
     .lowest = 0, .highest = 1, .names = {"mean", "max"}, .viewer_highest = 1, KV_OPTION_FIELD(quoka_group)},
    {.flag = "gqa-agg", .help = "per query head, or per KV head by max or mean (quest, fier)",
     .lowest = 0, .highest = 2, .names = {"head", "max", "mean"}, .viewer_highest = 2, KV_OPTION_FIELD(gqa_agg)},
    {.flag = "n-sink", .help = "first keys always kept (streaming)",
     .lowest = 0, .highest = 1u << 24, .viewer_highest = 64, KV_OPTION_FIELD(n_sink)},
    {.flag = "sparq-r", .help = "query components kept (sparq)",
     .lowest = 1, .highest = 4096, .viewer_lowest = 1, KV_OPTION_FIELD(sparq_r)},
    {.flag = "loki-r", .help = "principal components kept (loki)",
     .lowest = 1, .highest = 1024, .viewer_lowest = 1, KV_OPTION_FIELD(loki_r)},
    {.flag = "snap-window", .help = "observation window, in queries (snapkv)",
     .lowest = 1, .highest = 1u << 20, .viewer_lowest = 1, .viewer_highest = 256, KV_OPTION_FIELD(snap_window)},
    {.flag = "snap-pool", .help = "average-pooling kernel (snapkv)",
     .lowest = 1, .highest = 1023, .odd = true, .viewer_lowest = 1, .viewer_highest = 31, KV_OPTION_FIELD(snap_pool)},
    {.flag = "sample-queries", .help = "queries sampled (sampleattention)",
     .lowest = 1, .highest = 1u << 20, .viewer_lowest = 1, .viewer_highest = 64, KV_OPTION_FIELD(sample_queries)},
    {.flag = "sample-stride", .help = "positions between sampled queries (sampleattention)",
     .lowest = 1, .highest = 1u << 20, .viewer_lowest = 1, .viewer_highest = 256, KV_OPTION_FIELD(sample_stride)},
};
#undef KV_OPTION_FIELD

// A field added to MethodOptions without a row above would be missing from the
// CLI, the viewer and the options key; every field is 32 bits, so its size counts them.
static_assert(sizeof(MethodOptions) == 12 * sizeof(uint32_t), "MethodOptions and kOptions list the same fields");

Granularity per_kv_head(const MethodOptions&, Mode) { return Granularity::kv_head; }
Granularity per_query_head(const MethodOptions&, Mode) { return Granularity::query_head; }
Granularity per_head_unless_aggregated(const MethodOptions& o, Mode) {
  return o.gqa_agg == HeadAggregate::head ? Granularity::query_head : Granularity::kv_head;
}
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
};

std::string known_methods() {
  std::string known = "dense";
  for (const MethodSpec& m : kMethods) known += std::string(", ") + m.name;
  return known;
}

}  // namespace

std::string OptionSpec::text(const MethodOptions& options) const {
  const uint32_t value = get(options);
  return names.empty() ? std::to_string(value) : names.at(value);
}

void OptionSpec::parse(MethodOptions& options, const std::string& text) const {
  if (!names.empty()) {
    for (uint32_t i = 0; i < names.size(); ++i)
      if (text == names[i]) return set(options, i);
    std::string choices;
    for (const char* name : names) choices += (choices.empty() ? "" : "|") + std::string(name);
    throw InputError(std::string("--") + flag + " must be " + choices + ", not '" + text + "'");
  }
  const bool digits = !text.empty() && text.size() <= 10 && std::all_of(text.begin(), text.end(), ::isdigit);
  const unsigned long long value = digits ? std::stoull(text) : 0;
  if (!digits || value < lowest || value > highest)
    throw InputError(std::string("--") + flag + " must be an integer in [" + std::to_string(lowest) + ", " +
                     std::to_string(highest) + "], not '" + text + "'");
  if (odd && value % 2 == 0) throw InputError(std::string("--") + flag + " must be odd, not " + text);
  set(options, uint32_t(value));
}

const std::vector<OptionSpec>& option_table() { return kOptions; }

const OptionSpec& find_option(const std::string& flag) {
  for (const OptionSpec& o : kOptions)
    if (flag == o.flag) return o;
  throw InputError("unknown method option --" + flag);
}

std::string MethodOptions::key() const {
  std::string key;
  for (const OptionSpec& o : kOptions) key += std::string(o.flag) + "=" + std::to_string(o.get(*this)) + ";";
  return key;
}

uint32_t parse_budget(const std::string& text, uint32_t tokens, const std::string& option) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string number = percent ? text.substr(0, text.size() - 1) : text;
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (number.empty() || *end || !(value > 0) || (percent && value > 100) || (!percent && value != std::floor(value)) ||
      value > double(1u << 30))
    throw InputError(option + " takes a positive key count or a percentage of T (3%), not '" + text + "'");
  return percent ? std::max<uint32_t>(1, uint32_t(std::lround(value / 100.0 * tokens))) : uint32_t(value);
}

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

HeadRows head_rows(const AttentionShape& shape, HeadAggregate aggregate) {
  if (aggregate == HeadAggregate::head) return {shape.heads, 1, AGGREGATE_HEAD};
  return {shape.kv_heads, shape.group(), aggregate == HeadAggregate::max ? AGGREGATE_MAX : AGGREGATE_MEAN};
}

}  // namespace kv
