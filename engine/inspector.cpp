#include "inspector.h"

#include <cmath>

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

Inspection Inspector::inspect(const Block& block, const std::string& method, const MethodOptions& options,
                              uint32_t budget) {
  const AttentionShape& s = layer_.shape;
  const uint32_t max_queries = max_block_queries(mode_, chunk_);
  const std::string key = method + "/" + std::to_string(options.page_size) + "/" + std::to_string(options.group_size) +
                          "/" + std::to_string(options.n_q) + "/" + std::to_string(options.quoka_max) + "/" +
                          std::to_string(int(options.gqa_agg)) + "/" + std::to_string(options.n_sink);
  std::unique_ptr<Method>& built = methods_[key];
  if (!built) built = make_method(device_, gpu_, method, options, mode_, max_queries);
  Method& chosen = *built;
  Inspection r;
  r.block = block;
  r.budget = budget;
  r.granularity = chosen.granularity();
  r.rows = rows_of(s, r.granularity);
  r.width = chosen.list_width(budget);
  r.oracle_granularity = oracle_->granularity();
  r.oracle_rows = rows_of(s, r.oracle_granularity);
  vk::Buffer selection(device_, size_t(r.rows) * r.width * 4), oracle(device_, size_t(r.oracle_rows) * budget * 4);
  NeedleSpan needle;
  if (auto span = capture_.needle_span()) needle = {span->first, span->second};

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
    chosen.record(pass, block, inputs, budget, selection);
    sparse_.record(pass, gpu_, sparse_request(queries_.buffer(), block, selection, heads_per_row(s, r.granularity), r.width),
                   "sparse_attention");
    metrics_.record(pass, block.n_queries, dense_, sparse_, selection, r.width, heads_per_row(s, r.granularity), oracle,
                    budget, heads_per_row(s, r.oracle_granularity), needle, candidates);
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

}  // namespace kv
