#include "methods/registry.h"

#include "../shaders/layouts.h"
#include "error.h"

namespace kv {

const char* mode_name(Mode mode) { return mode == Mode::decode ? "decode" : "prefill"; }

const char* granularity_name(Granularity granularity) {
  return granularity == Granularity::query_head ? "query_head" : "kv_head";
}

const char* aggregate_name(HeadAggregate aggregate) {
  return aggregate == HeadAggregate::head ? "head" : aggregate == HeadAggregate::max ? "max" : "mean";
}

HeadRows head_rows(const AttentionShape& shape, HeadAggregate aggregate) {
  if (aggregate == HeadAggregate::head) return {shape.heads, 1, AGGREGATE_HEAD};
  return {shape.kv_heads, shape.group(), aggregate == HeadAggregate::max ? AGGREGATE_MAX : AGGREGATE_MEAN};
}

std::vector<Block> decode_blocks(uint32_t tokens, uint32_t probes) {
  std::vector<Block> blocks;
  for (uint32_t t = tokens - std::min(probes, tokens); t < tokens; ++t) blocks.push_back({Mode::decode, t, 1});
  return blocks;
}

std::vector<Block> prefill_blocks(uint32_t tokens, uint32_t chunk) {
  if (chunk == 0) throw InputError("--chunk must be positive");
  std::vector<Block> blocks;
  for (uint32_t first = 0; first < tokens; first += chunk)
    blocks.push_back({Mode::prefill, first, std::min(chunk, tokens - first)});
  return blocks;
}

const std::vector<std::string>& method_names() {
  static const std::vector<std::string> names{"oracle", "quoka", "quest", "fier", "streaming", "keydiff", "tova", "sparq", "loki", "snapkv", "h2o", "sampleattention"};
  return names;
}

bool method_supports(const std::string& name, Mode) {
  return std::find(method_names().begin(), method_names().end(), name) != method_names().end();
}

std::unique_ptr<Method> make_method(const vk::Device& device, const GpuLayer& layer, const std::string& name,
                                    const MethodOptions& options, Mode mode, uint32_t max_queries) {
  if (name == "oracle") return make_oracle(device, layer, options, mode, max_queries);
  if (name == "quoka") return make_quoka(device, layer, options, mode, max_queries);
  if (name == "quest") return make_quest(device, layer, options, mode, max_queries);
  if (name == "fier") return make_fier(device, layer, options, mode, max_queries);
  if (name == "streaming") return make_streaming(device, layer, options, mode, max_queries);
  if (name == "keydiff") return make_keydiff(device, layer, options, mode, max_queries);
  if (name == "tova") return make_tova(device, layer, options, mode, max_queries);
  if (name == "sparq") return make_sparq(device, layer, options, mode, max_queries);
  if (name == "loki") return make_loki(device, layer, options, mode, max_queries);
  if (name == "snapkv") return make_snapkv(device, layer, options, mode, max_queries);
  if (name == "h2o") return make_h2o(device, layer, options, mode, max_queries);
  if (name == "sampleattention") return make_sample_attention(device, layer, options, mode, max_queries);
  std::string known = "dense";
  for (const std::string& n : method_names()) known += ", " + n;
  throw InputError("unknown method '" + name + "' (known: " + known + ")");
}

}  // namespace kv
