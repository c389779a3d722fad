// lessismore: one set of keys for every head, chosen at a few layers and
// reused by the layers after them (docs/methods.md).
#include <algorithm>

#include "../shaders/layouts.h"
#include "base/error.h"
#include "kernels/layer_kernel.h"
#include "kernels/topk.h"
#include "lessismore_finish.spv.h"
#include "lessismore_rank.spv.h"
#include "lessismore_scores.spv.h"
#include "methods/mean_query.h"
#include "methods/table.h"

namespace kv {

LayerRole lessismore_layer_role(uint32_t layer, const MethodOptions& o) {
  if (layer < o.lim_start) return LayerRole::dense;
  if (layer == o.lim_start || (layer == o.lim_correction && o.lim_correction > o.lim_start)) return LayerRole::select;
  return LayerRole::reuse;
}

namespace {

// The budget's split: m keys ranked by the heads, the rest the recency window
// (the paper's int(K * (1 - r)) and K minus it).
uint32_t ranked_keys(uint32_t budget, uint32_t window_percent) {
  return uint32_t(uint64_t(budget) * (100 - window_percent) / 100);
}

class LessIsMore final : public Method {
 public:
  LessIsMore(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options)
      : layer_(layer),
        window_percent_(options.lim_window),
        mean_query_(device, layer),
        scores_kernel_(make_layer_kernel<layouts::LessIsMoreScoresPush>(device, "lessismore_scores", lessismore_scores_spirv,
                                                                        4, layer.shape, layer.dtype)),
        rank_kernel_(device, "lessismore_rank", lessismore_rank_spirv, {3, sizeof(layouts::LessIsMoreRankPush)}, {}),
        finish_kernel_(device, "lessismore_finish", lessismore_finish_spirv, {1, sizeof(layouts::LessIsMoreFinishPush)}, {}),
        topk_(device),
        scores_(device, size_t(layer.shape.heads) * layer.shape.tokens * 4),
        unified_(device, size_t(layer.shape.tokens) * 4),
        // m < T, and list_width refuses an m above LESSISMORE_MAX_RANKED.
        head_lists_(device, size_t(layer.shape.heads) * std::min(layer.shape.tokens, LESSISMORE_MAX_RANKED) * 4) {}

  std::string name() const override { return "lessismore"; }
  Granularity granularity() const override { return Granularity::kv_head; }
  ScoreView scores() const override { return {&scores_, layer_.shape.heads, layer_.shape.tokens, 1}; }
  nlohmann::json params() const override { return {{"window_percent", window_percent_}}; }

  uint32_t list_width(uint32_t budget) const override {
    if (ranked_keys(budget, window_percent_) > LESSISMORE_MAX_RANKED)
      throw InputError("lessismore ranks at most " + std::to_string(LESSISMORE_MAX_RANKED) + " keys a head (" +
                           std::to_string(100 - window_percent_) + "% of the budget): a budget of " + std::to_string(budget) +
                           " is too large",
                       "budget");
    return budget;
  }

  void record(vk::Pass& pass, const Block& block, const BlockInputs& inputs, uint32_t budget,
              const vk::Buffer& indices) override {
    const AttentionShape& s = layer_.shape;
    const uint32_t candidates = block.candidates(), width = list_width(budget);
    if (budget >= candidates) {  // every candidate: the window is all of them
      finish(pass, indices, width, 0, candidates, 0);
      return;
    }
    const uint32_t ranked = ranked_keys(budget, window_percent_), window = budget - ranked;
    const uint32_t scored = candidates - window;
    if (ranked > 0) {
      const QuerySource query = mean_query_.record(pass, *inputs.queries, block.n_queries);
      const layouts::LessIsMoreScoresPush push{s.heads, s.kv_heads, s.tokens, scored, s.tokens, query.raw_query,
                                               float(layer_.scale)};
      pass.dispatch(scores_kernel_, {query.buffer, &layer_.keys, &scores_, &unified_}, push, ceil_div(scored, 128), s.heads,
                    1, "scores");
      topk_.record(pass, scores_, s.heads, scored, s.tokens, ranked, head_lists_, ranked, "head_topk");
      pass.dispatch(rank_kernel_, {&scores_, &head_lists_, &unified_},
                    layouts::LessIsMoreRankPush{s.heads, ranked, s.tokens}, s.heads, 1, 1, "rank");
      topk_.record(pass, unified_, 1, scored, scored, ranked, indices, width, "unified_topk");
    }
    finish(pass, indices, width, ranked, window, scored);
  }

 private:
  void finish(vk::Pass& pass, const vk::Buffer& indices, uint32_t width, uint32_t ranked, uint32_t window,
              uint32_t first_window) {
    const uint32_t rows = layer_.shape.kv_heads;
    pass.dispatch(finish_kernel_, {&indices}, layouts::LessIsMoreFinishPush{rows, width, ranked, window, first_window},
                  ceil_div(rows * width, 128), 1, 1, "finish");
  }

  const GpuLayer& layer_;
  uint32_t window_percent_;
  MeanQuery mean_query_;
  vk::Kernel scores_kernel_, rank_kernel_, finish_kernel_;
  TopK topk_;
  vk::Buffer scores_, unified_;
  vk::Buffer head_lists_;  // each head's top m keys, [H, m]
};

}  // namespace

std::unique_ptr<Method> make_lessismore(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options, Mode,
                                        uint32_t) {
  return std::make_unique<LessIsMore>(device, layer, options);
}

}  // namespace kv
