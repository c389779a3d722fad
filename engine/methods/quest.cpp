// Quest (docs/methods.md): page min/max bounds of q . k, top pages plus the last page.
// Prefill scores the chunk's mean query, and treats the last past key's page
// as decode treats the page holding t (docs/methods.md).
#include "../shaders/layouts.h"
#include "kernels/layer_kernel.h"
#include "methods/mean_query.h"
#include "methods/quest_pages.h"
#include "methods/table.h"
#include "quest_page_scores.spv.h"
#include "quest_page_topk.spv.h"
#include "kernels/topk.h"

#include <cstdlib>
#include <cstring>
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

// quest_page_topk: the scores and the top-k in one dispatch of 512-invocation
// workgroups where a KV head has one row (MHA, or a list per KV head) and
// its pages fit the kernel's staged row; same parts as quest_page_scores at
// the same invocations a dispatch. KVSCOPE_QUEST_FUSED=0 keeps the two
// dispatches (to time one against the other in one process).
constexpr uint32_t kPageTopKWorkgroup = 512;

bool fused_selection_wanted() {
  const char* value = std::getenv("KVSCOPE_QUEST_FUSED");
  return value == nullptr || std::strcmp(value, "0") != 0;
}

// quest_page_topk's shared memory beside the top-k's: its batch of four queries and its arrival flag.
uint32_t page_topk_row_capacity(const vk::Device& device, const AttentionShape& shape) {
  return staged_row_capacity(device, 4 * shape.dim * 4 + 4);
}

std::vector<vk::Kernel> page_topk_kernels(const vk::Device& device, const GpuLayer& layer, uint32_t row_capacity) {
  std::vector<vk::Kernel> kernels;
  if (row_capacity == 0) return kernels;
  for (uint32_t parts : kPageScoreParts) {
    const uint32_t specialization[] = {row_capacity, kPageTopKWorkgroup / device.info().subgroup_size, layer.shape.dim,
                                       element_type(layer.dtype), parts};
    kernels.emplace_back(device, "quest_page_topk", quest_page_topk_spirv,
                         vk::KernelLayout{5, sizeof(layouts::QuestPageTopKPush)}, specialization);
  }
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
        fused_row_capacity_(rows_.count == layer.shape.kv_heads && fused_selection_wanted()
                                ? page_topk_row_capacity(device, layer.shape)
                                : 0),
        page_topk_kernels_(page_topk_kernels(device, layer, fused_row_capacity_)),
        arrivals_(device, size_t(layer.shape.kv_heads) * sizeof(uint32_t)),
        scores_(device, size_t(rows_.count) * pages_.pages() * sizeof(float)) {
    arrivals_.fill(0);
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
    const size_t parts = page_score_parts_index(s.kv_heads, scored_pages);
    if (fused_row_capacity_ != 0 && scored_pages <= fused_row_capacity_) {
      const layouts::QuestPageTopKPush push{scored_pages, kept, pages_.pages(), list_width(budget), 0, page_size,
                                            candidates, 0, 0, 0, s.heads, s.kv_heads, pages_.pages(), scored_pages,
                                            rows_.heads_per_row, aggregate_code(options_.gqa_agg), query.raw_query};
      const uint32_t workgroups = ceil_div(scored_pages, kPageTopKWorkgroup / kPageScoreParts[parts]);
      pass.dispatch(page_topk_kernels_[parts], {query.buffer, &pages_.minmax(), &scores_, &indices, &arrivals_}, push,
                    std::max(workgroups, 1u), s.kv_heads, 1, "page_topk");
      return;
    }
    layouts::PageScoresPush push{s.heads, s.kv_heads, pages_.pages(), scored_pages, pages_.pages(), rows_.heads_per_row,
                                 aggregate_code(options_.gqa_agg), query.raw_query};
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
  uint32_t fused_row_capacity_;  // the most scored pages quest_page_topk takes; 0 where it is not used
  std::vector<vk::Kernel> page_topk_kernels_;  // by kPageScoreParts
  vk::Buffer arrivals_;  // quest_page_topk's finished workgroups per KV head, zero between dispatches
  vk::Buffer scores_;
  std::vector<vk::StageTime> build_times_;
};

}  // namespace

std::unique_ptr<Method> make_quest(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options, Mode,
                                   uint32_t) {
  return std::make_unique<Quest>(device, layer, options);
}

}  // namespace kv
