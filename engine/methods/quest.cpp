// Quest (METHODS.md): page min/max bounds of q . k, top pages plus the last page.
// Prefill scores the chunk's mean query, and treats the last past key's page
// as decode treats the page holding t (docs/methods.md).
#include "../shaders/layouts.h"
#include "methods/kernels.h"
#include "methods/mean_query.h"
#include "methods/quest_pages.h"
#include "methods/registry.h"
#include "quest_page_scores.spv.h"
#include "topk.h"

namespace kv {
namespace {

class Quest final : public Method {
 public:
  Quest(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options)
      : layer_(layer),
        options_(options),
        rows_(head_rows(layer.shape, options.gqa_agg)),
        pages_(device, layer, options.page_size),
        mean_query_(device, layer),
        scores_kernel_(make_layer_kernel<layouts::PageScoresPush>(device, "quest_page_scores", quest_page_scores_spirv, 3,
                                                                  layer.shape, layer.dtype)),
        topk_(device),
        scores_(device, size_t(rows_.rows) * pages_.pages() * sizeof(float)) {
    vk::Pass build(device);
    pages_.record_update(build, 0, layer.shape.tokens);
    build.run();
    build_times_ = build.stage_times();
  }

  std::string name() const override { return "quest"; }
  Granularity granularity() const override {
    return options_.gqa_agg == HeadAggregate::head ? Granularity::query_head : Granularity::kv_head;
  }
  ScoreView scores() const override { return {&scores_, rows_.rows, pages_.pages(), options_.page_size}; }
  nlohmann::json params() const override {
    return {{"page_size", options_.page_size}, {"gqa_agg", aggregate_name(options_.gqa_agg)}};
  }
  uint32_t list_width(uint32_t budget) const override { return std::max(budget, options_.page_size); }
  std::vector<vk::StageTime> build_times() const override { return build_times_; }

  void record(vk::Pass& pass, const Block& block, const BlockInputs& inputs, uint32_t budget,
              const vk::Buffer& indices) override {
    const AttentionShape& s = layer_.shape;
    const uint32_t candidates = block.candidates(), page_size = options_.page_size;
    const uint32_t scored_pages = candidates ? (candidates - 1) / page_size : 0;  // pages before the last one
    const uint32_t kept = budget / page_size > 1 ? budget / page_size - 1 : 0;
    const QuerySource query = mean_query_.record(pass, *inputs.queries, block.n_queries);
    layouts::PageScoresPush push{s.heads, s.kv_heads, pages_.pages(), scored_pages, pages_.pages(), rows_.heads_per_row,
                                 rows_.aggregate, query.raw_query};
    pass.dispatch(scores_kernel_, {query.buffer, &pages_.minmax(), &scores_}, push, ceil_div(scored_pages, 32),
                  s.kv_heads, 1, "page_scores");
    // The top-k writes the kept pages as tokens, with the last page's.
    topk_.record_pages(pass, scores_, rows_.rows, scored_pages, pages_.pages(), kept, page_size, candidates, indices,
                       list_width(budget));
  }

 private:
  const GpuLayer& layer_;
  MethodOptions options_;
  HeadRows rows_;
  QuestPages pages_;
  MeanQuery mean_query_;
  vk::Kernel scores_kernel_;
  TopK topk_;
  vk::Buffer scores_;
  std::vector<vk::StageTime> build_times_;
};

}  // namespace

std::unique_ptr<Method> make_quest(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options, Mode,
                                   uint32_t) {
  return std::make_unique<Quest>(device, layer, options);
}

}  // namespace kv
