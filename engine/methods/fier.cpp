// Fier (docs/methods.md): approximate q . k from 1-bit keys with per-block (lo, hi),
// top-k tokens. Prefill scores the chunk's mean query (docs/methods.md).
#include "../shaders/layouts.h"

#include "fier_approx_scores.spv.h"
#include "kernels/layer_kernel.h"
#include "kernels/topk.h"
#include "methods/fier_keys.h"
#include "methods/mean_query.h"
#include "methods/table.h"

namespace kv {
namespace {

// fier_approx_scores' workgroups: 128 invocations, each a pair of a block's tokens.
uint32_t pair_workgroups(uint32_t candidates, uint32_t group_size) {
  return ceil_div(ceil_div(candidates, group_size) * ceil_div(group_size, 2), 128);
}

class Fier final : public Method {
 public:
  Fier(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options)
      : layer_(layer),
        options_(options),
        rows_(selection_rows(layer.shape, aggregate_granularity(options.gqa_agg))),
        keys_(device, layer, options.group_size),
        mean_query_(device, layer),
        scores_kernel_(make_layer_kernel<layouts::FierScoresPush>(device, "fier_approx_scores", fier_approx_scores_spirv, 5,
                                                                   layer.shape, layer.dtype)),
        topk_(device),
        scores_(device, size_t(rows_.count) * layer.shape.tokens * sizeof(float)) {
    vk::Pass build(device);
    keys_.record_update(build, 0, layer.shape.tokens);
    build.run();
    build_times_ = build.stage_times();
  }

  std::string name() const override { return "fier"; }
  Granularity granularity() const override {
    return aggregate_granularity(options_.gqa_agg);
  }
  ScoreView scores() const override { return {&scores_, rows_.count, layer_.shape.tokens, 1}; }
  nlohmann::json params() const override {
    return {{"group_size", options_.group_size}, {"gqa_agg", find_option("gqa-agg").text(options_)}};
  }
  std::vector<vk::StageTime> build_times() const override { return build_times_; }
  void record_cache_update(vk::Pass& pass, uint32_t first_token, uint32_t valid_tokens) override {
    keys_.record_update(pass, first_token, valid_tokens);
  }

  void record(vk::Pass& pass, const Block& block, const BlockInputs& inputs, uint32_t budget,
              const vk::Buffer& indices) override {
    const AttentionShape& s = layer_.shape;
    const uint32_t candidates = block.candidates();
    // docs/methods.md cuts keys [0, t] into blocks: where the candidates end inside
    // a block the cache holds longer, the scores kernel quantises it over them;
    // the cache keeps every block over all T keys.
    const bool partial = candidates % options_.group_size != 0 && candidates < s.tokens;
    const uint32_t fresh_block = partial ? candidates / options_.group_size : FIER_NO_FRESH_BLOCK;
    const QuerySource query = mean_query_.record(pass, *inputs.queries, block.n_queries);
    layouts::FierScoresPush push{s.heads, s.kv_heads, s.tokens, options_.group_size, keys_.blocks(), candidates,
                                 s.tokens, rows_.heads_per_row, aggregate_code(options_.gqa_agg), query.raw_query, fresh_block};
    pass.dispatch(scores_kernel_,
                  {query.buffer, &keys_.low_high(), &keys_.bits(), &scores_, &layer_.keys},
                  push, pair_workgroups(candidates, options_.group_size), s.kv_heads, 1, "approx_scores");
    topk_.record(pass, scores_, rows_.count, candidates, s.tokens, budget, indices, budget);
  }

 private:
  const GpuLayer& layer_;
  MethodOptions options_;
  SelectionRows rows_;
  FierKeys keys_;
  MeanQuery mean_query_;
  vk::Kernel scores_kernel_;
  TopK topk_;
  vk::Buffer scores_;
  std::vector<vk::StageTime> build_times_;
};

}  // namespace

std::unique_ptr<Method> make_fier(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options, Mode,
                                  uint32_t) {
  return std::make_unique<Fier>(device, layer, options);
}

}  // namespace kv
