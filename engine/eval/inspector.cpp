#include "eval/inspector.h"

#include <cmath>

#include "methods/table.h"

namespace kv {

Inspector::Inspector(const vk::Device& device, const Capture& capture, int layer, Mode mode, uint32_t chunk)
    : device_(device),
      capture_(capture),
      layer_(capture.layer(layer)),
      mode_(mode),
      chunk_(chunk),
      gpu_(device, capture, layer_),
      queries_(device, layer_, max_block_queries(mode, chunk)),
      dense_(device, layer_.shape, layer_.dtype, Attention::Keys::dense, max_block_queries(mode, chunk)),
      sparse_(device, layer_.shape, layer_.dtype, Attention::Keys::sparse, max_block_queries(mode, chunk)),
      metrics_(device, layer_.shape),
      oracle_(make_method(device, gpu_, "oracle", {}, mode, max_block_queries(mode, chunk))) {}

Inspector::CurveBlock::CurveBlock(const vk::Device& device, const CaptureLayer& layer, uint32_t max_queries)
    : queries(device, layer, max_queries),
      dense(device, layer.shape, layer.dtype, Attention::Keys::dense, max_queries) {}

bool Inspector::can_select(const std::string& method, const MethodOptions& options) const {
  return choosing_layer(capture_, layer_, method, options, true) != nullptr;
}

Inspector::Built& Inspector::method(const std::string& name, const MethodOptions& options) {
  if (name == "oracle") {  // it takes no options
    if (!oracle_built_.chooser) oracle_built_.chooser = std::make_unique<ChoosingLayer>(device_, capture_, layer_, layer_, 0);
    return oracle_built_;
  }
  const std::string key = name + "/" + options.key();
  Built& built = methods_[key];
  if (!built.method) {
    const uint32_t max_queries = max_block_queries(mode_, chunk_);
    built.chooser = std::make_unique<ChoosingLayer>(device_, capture_, layer_, *choosing_layer(capture_, layer_, name, options),
                                                    max_queries);
    built.method = make_method(device_, built.chooser->or_else(gpu_), name, options, mode_, max_queries);
  }
  return built;
}

Inspection Inspector::inspect(const Block& block, const std::string& method_name, const MethodOptions& options,
                              uint32_t budget) {
  const AttentionShape& s = layer_.shape;
  Built& built = method(method_name, options);
  Method& chosen = built.method ? *built.method : *oracle_;
  Inspection r;
  r.block = block;
  r.budget = budget;
  r.granularity = chosen.granularity();
  r.rows = selection_rows(s, r.granularity).count;
  r.width = chosen.list_width(budget);
  r.oracle_granularity = oracle_->granularity();
  r.oracle_rows = selection_rows(s, r.oracle_granularity).count;
  vk::Buffer& selection = vk::grown(device_, selection_, size_t(r.rows) * r.width * 4);
  vk::Buffer& oracle = vk::grown(device_, oracle_list_, size_t(r.oracle_rows) * budget * 4);

  queries_.upload(block);
  const BlockInputs inputs{&queries_.buffer(), &dense_.log_sum_exp_buffer()};
  {
    vk::Pass pass(device_);
    dense_.record(pass, gpu_, {&queries_.buffer(), block.n_queries, block.first_query}, "dense");
    pass.run();
    r.dense_times = pass.stage_times();
  }
  {
    vk::Pass pass(device_);
    oracle_->record(pass, block, inputs, budget, oracle);
    pass.run();
  }
  const uint32_t candidates = block.candidates();
  {  // dense mass per key, from the oracle's scores
    const ScoreView view = oracle_->scores();
    std::vector<float> scores = view.buffer->download_values<float>(size_t(view.rows) * view.stride);
    std::vector<float> lse = dense_.log_sum_exp(block.n_queries);
    r.key_mass.assign(size_t(s.heads) * candidates, 0.0f);
    for (uint32_t h = 0; h < s.heads; ++h)
      for (uint32_t j = 0; j < candidates; ++j)
        r.key_mass[size_t(h) * candidates + j] =
            mode_ == Mode::decode
                ? std::exp(scores[size_t(h) * view.stride + j] - lse[h])
                : scores[size_t(h / s.group()) * view.stride + j] / float(s.group() * block.n_queries);
  }
  {
    vk::Pass pass(device_);
    record_selection_step(pass, chosen, gpu_, block, built.chooser->inputs(block, inputs), budget, selection, sparse_, metrics_,
                          {&dense_, &oracle, selection_rows(s, r.oracle_granularity).heads_per_row, needle_of(capture_)},
                          inputs.queries);
    pass.run();
    for (const vk::StageTime& t : pass.stage_times())
      if (t.stage != "metrics") r.method_times.push_back(t);
  }
  r.selection = selection.download_values<int32_t>(size_t(r.rows) * r.width);
  r.oracle = oracle.download_values<int32_t>(size_t(r.oracle_rows) * budget);
  r.heads = metrics_.read();
  r.score_layout = chosen.scores();
  if (r.score_layout.buffer)
    r.method_scores = r.score_layout.buffer->download_values<float>(size_t(r.score_layout.rows) * r.score_layout.stride);
  r.score_layout.buffer = nullptr;
  return r;
}

std::vector<Block> Inspector::curve_blocks() const {
  return blocks_with_candidates(mode_, layer_.shape.tokens, 4, chunk_, mode_ == Mode::prefill ? 2 : 0);
}

MetricTriple Inspector::curve_point(const std::vector<Block>& blocks, const std::string& method_name,
                                    const MethodOptions& options, uint32_t budget) {
  const AttentionShape& s = layer_.shape;
  bool same_blocks = curve_blocks_.size() == blocks.size();
  for (size_t i = 0; same_blocks && i < blocks.size(); ++i)
    same_blocks = curve_blocks_[i]->block.first_query == blocks[i].first_query;
  if (!same_blocks) {
    curve_blocks_.clear();
    for (const Block& block : blocks) {
      auto built = std::make_unique<CurveBlock>(device_, layer_, max_block_queries(mode_, chunk_));
      built->block = block;
      built->queries.upload(block);
      vk::Pass pass(device_);
      built->dense.record(pass, gpu_, {&built->queries.buffer(), block.n_queries, block.first_query}, "dense");
      pass.run();
      curve_blocks_.push_back(std::move(built));
    }
  }
  Built& built = method(method_name, options);
  Method& chosen = built.method ? *built.method : *oracle_;
  vk::Buffer& selection =
      vk::grown(device_, selection_, size_t(selection_rows(s, chosen.granularity()).count) * chosen.list_width(budget) * 4);
  vk::Buffer& oracle = vk::grown(device_, oracle_list_, size_t(selection_rows(s, oracle_->granularity()).count) * budget * 4);
  MetricTriple mean;
  for (const std::unique_ptr<CurveBlock>& cb : curve_blocks_) {
    const Block& block = cb->block;
    const BlockInputs inputs{&cb->queries.buffer(), &cb->dense.log_sum_exp_buffer()};
    vk::Pass pass(device_);
    oracle_->record(pass, block, inputs, budget, oracle);
    record_selection_step(pass, chosen, gpu_, block, built.chooser->inputs(block, inputs), budget, selection, sparse_, metrics_,
                          {&cb->dense, &oracle, selection_rows(s, oracle_->granularity()).heads_per_row, needle_of(capture_)},
                          inputs.queries);
    pass.run();
    const double share = 1.0 / (double(s.heads) * curve_blocks_.size());
    for (const HeadMetrics& h : metrics_.read()) {
      mean.coverage += h.coverage * share;
      mean.recall += h.recall * share;
      mean.output_error += h.output_error * share;
    }
  }
  return mean;
}

QueryStats Inspector::query_stats(uint32_t head, const Block& block, uint32_t n_q) {
  if (!query_statistics_) query_statistics_ = std::make_unique<QueryStatistics>(device_, layer_, gpu_);
  return query_statistics_->compute(head, block, chunk_, n_q);
}

}  // namespace kv
