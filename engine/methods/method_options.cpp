#include "methods/method_options.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace kv {
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
    {.flag = "lim-start", .help = "first layer that selects; layers before it attend densely (lessismore)",
     .lowest = 0, .highest = 1024, .viewer_lowest = 0, .viewer_highest = 32, KV_OPTION_FIELD(lim_start)},
    {.flag = "lim-correction", .help = "layer that selects again, after lim-start (lessismore)",
     .lowest = 0, .highest = 1024, .viewer_lowest = 0, .viewer_highest = 64, KV_OPTION_FIELD(lim_correction)},
    {.flag = "lim-window", .help = "percent of the budget kept as the recency window (lessismore)",
     .lowest = 0, .highest = 100, .viewer_lowest = 0, .viewer_highest = 100, KV_OPTION_FIELD(lim_window)},
};
#undef KV_OPTION_FIELD

// A field added to MethodOptions without a row above would be missing from the
// CLI, the viewer and the options key; every field is 32 bits, so its size counts them.
static_assert(sizeof(MethodOptions) == 15 * sizeof(uint32_t), "MethodOptions and kOptions list the same fields");

}  // namespace

std::string OptionSpec::keyword() const {
  std::string keyword = flag;
  std::replace(keyword.begin(), keyword.end(), '-', '_');
  return keyword;
}

std::string OptionSpec::text(const MethodOptions& options) const {
  const uint32_t value = get(options);
  return names.empty() ? std::to_string(value) : names.at(value);
}

void OptionSpec::parse(MethodOptions& options, const std::string& text) const {
  if (!names.empty()) {
    for (uint32_t i = 0; i < names.size(); ++i)
      if (text == names[i]) return set(options, i);
    std::string choices;
    for (const char* name : names) choices.append(choices.empty() ? "" : "|").append(name);
    throw InputError("must be " + choices + ", not '" + text + "'", flag);
  }
  const bool digits = !text.empty() && text.size() <= 10 && std::all_of(text.begin(), text.end(), ::isdigit);
  const unsigned long long value = digits ? std::stoull(text) : 0;
  if (!digits || value < lowest || value > highest)
    throw InputError("must be an integer in [" + std::to_string(lowest) + ", " + std::to_string(highest) + "], not '" + text + "'",
                     flag);
  if (odd && value % 2 == 0) throw InputError("must be odd, not " + text, flag);
  set(options, uint32_t(value));
}

const std::vector<OptionSpec>& option_table() { return kOptions; }

const OptionSpec& find_option(const std::string& flag) {
  for (const OptionSpec& o : kOptions)
    if (flag == o.flag) return o;
  throw InputError("unknown method option '" + flag + "'");
}

std::string MethodOptions::key() const {
  std::string key;
  for (const OptionSpec& o : kOptions) key += std::string(o.flag) + "=" + std::to_string(o.get(*this)) + ";";
  return key;
}

uint32_t parse_budget(const std::string& text, uint32_t tokens, const std::string& what) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string number = percent ? text.substr(0, text.size() - 1) : text;
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (number.empty() || *end || !(value > 0) || (percent && value > 100) || (!percent && value != std::floor(value)) ||
      value > double(1u << 30))
    throw InputError(what + " takes a positive key count or a percentage of T (3%), not '" + text + "'");
  return percent ? std::max<uint32_t>(1, uint32_t(std::lround(value / 100.0 * tokens))) : uint32_t(value);
}

}  // namespace kv
