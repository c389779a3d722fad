// Quest (docs/methods.md): page min/max bounds of q . k, top pages plus the last page.
// Prefill scores the chunk's mean query, and treats the last past key's page
// as decode treats the page holding t (docs/methods.md).
#include "../shaders/layouts.h"
#include "kernels/layer_kernel.h"
#include "kernels/topk.h"
#include "methods/mean_query.h"
#include "methods/quest_pages.h"
#include "methods/table.h"
#include "quest_page_scores.spv.h"

#include <iterator>
#include <vector>

namespace kv {
namespace {

// quest_page_scores splits a page's channels into PARTS (2, 4 or 8) over
// 128 / PARTS pages a workgroup: more parts make shorter chains of loads,
// fewer make longer contiguous reads. A dispatch takes the fewest parts that
// still give it this many workgroups (8 a streaming multiprocessor on the
// H100), else 8. H100, page_scores us with 2 / 4 / 8 parts: 10.5 / 7.9 / 6.7
// at 8k, 12.0 / 9.9 / 9.3 at 32k, 18.7 / 21.2 / 23.0 at 128k
// (docs/perf-experiments.md).
constexpr uint32_t kPageScoreWorkgroups = 1024;
constexpr uint32_t kPageScoreParts[] = {2, 4, 8};
constexpr uint32_t kPageScoreWorkgroup = 128;  // quest_page_scores' local_size_x

// Workgroups a KV head's pages take with kPageScoreParts[parts] parts a page.
uint32_t page_score_workgroups(size_t parts, uint32_t scored_pages) {
  return ceil_div(scored_pages, kPageScoreWorkgroup / kPageScoreParts[parts]);
}

size_t page_score_parts_index(uint32_t kv_heads, uint32_t scored_pages) {
  for (size_t i = 0; i + 1 < std::size(kPageScoreParts); ++i)
    if (uint64_t(kv_heads) * page_score_workgroups(i, scored_pages) >= kPageScoreWorkgroups) return i;
  return std::size(kPageScoreParts) - 1;
}

std::vector<vk::Kernel> page_score_kernels(const vk::Device& device, const GpuLayer& layer) {
  std::vector<vk::Kernel> kernels;
  for (uint32_t parts : kPageScoreParts)
    kernels.push_back(make_layer_kernel<layouts::PageScoresPush>(device, "quest_page_scores", quest_page_scores_spirv, 3,
                                                                 layer.shape, layer.dtype, {parts}));
  return kernels;
}

class Quest final : public Method {
 public:
  Quest(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options)
      : layer_(layer),
        options_(options),
        rows_(selection_rows(layer.shape, aggregate_granularity(options.gqa_agg))),
        pages_(device, layer, options.page_size),
        mean_query_(device, layer),
        score_kernels_(page_score_kernels(device, layer)),
        topk_(device),
        scores_(device, size_t(rows_.count) * pages_.pages() * sizeof(float)) {
    vk::Pass build(device);
    pages_.record_update(build, 0, layer.shape.tokens);
    build.run();
    build_times_ = build.stage_times();
  }

  std::string name() const override { return "quest"; }
  Granularity granularity() const override {
    return aggregate_granularity(options_.gqa_agg);
  }
  ScoreView scores() const override { return {&scores_, rows_.count, pages_.pages(), options_.page_size}; }
  nlohmann::json params() const override {
    return {{"page_size", options_.page_size}, {"gqa_agg", find_option("gqa-agg").text(options_)}};
  }
  uint32_t list_width(uint32_t budget) const override { return std::max(budget, options_.page_size); }
  std::vector<vk::StageTime> build_times() const override { return build_times_; }
  void record_cache_update(vk::Pass& pass, uint32_t first_token, uint32_t valid_tokens) override {
    pages_.record_update(pass, first_token, valid_tokens);
  }

  void record(vk::Pass& pass, const Block& block, const BlockInputs& inputs, uint32_t budget,
              const vk::Buffer& indices) override {
    const AttentionShape& s = layer_.shape;
    const uint32_t candidates = block.candidates(), page_size = options_.page_size;
    const uint32_t scored_pages = candidates ? (candidates - 1) / page_size : 0;  // pages before the last one
    const uint32_t kept = budget / page_size > 1 ? budget / page_size - 1 : 0;
    const QuerySource query = mean_query_.record(pass, *inputs.queries, block.n_queries);
    layouts::PageScoresPush push{s.heads, s.kv_heads, pages_.pages(), scored_pages, pages_.pages(), rows_.heads_per_row,
                                 aggregate_code(options_.gqa_agg), query.raw_query};
    const size_t parts = page_score_parts_index(s.kv_heads, scored_pages);
    pass.dispatch(score_kernels_[parts], {query.buffer, &pages_.minmax(), &scores_}, push,
                  page_score_workgroups(parts, scored_pages), s.kv_heads, 1, "page_scores");
    // The top-k writes the kept pages as tokens, with the last page's.
    topk_.record_pages(pass, scores_, rows_.count, scored_pages, pages_.pages(), kept, page_size, candidates, indices,
                       list_width(budget));
  }

 private:
  const GpuLayer& layer_;
  MethodOptions options_;
  SelectionRows rows_;
  QuestPages pages_;
  MeanQuery mean_query_;
  std::vector<vk::Kernel> score_kernels_;  // by kPageScoreParts
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
