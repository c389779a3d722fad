#include "eval/evaluator.h"

#include <algorithm>
#include <map>

#include "base/error.h"
#include "kernels/attention.h"
#include "kernels/selection_metrics.h"
#include "methods/block_step.h"
#include "methods/table.h"

#include "base/median.h"

namespace kv {
namespace {

// Stage times of many runs, reduced to the median per stage in first-seen order.
class StageSamples {
 public:
  void add(const std::vector<vk::StageTime>& times) {
    for (const vk::StageTime& t : times) {
      const auto key = std::make_pair(t.stage, t.part);
      if (!samples_.count(key)) order_.push_back(key);
      samples_[key].push_back(t.milliseconds);
    }
  }
  std::vector<vk::StageTime> medians() const {
    std::vector<vk::StageTime> out;
    for (const auto& key : order_) out.push_back({key.first, key.second, median(samples_.at(key))});
    return out;
  }

 private:
  std::vector<std::pair<std::string, vk::Part>> order_;
  std::map<std::pair<std::string, vk::Part>, std::vector<double>> samples_;
};

// A method's metrics at one budget, summed over the blocks.
class Accumulator {
 public:
  explicit Accumulator(uint32_t heads) : head_sums_(heads), head_needle_sums_(heads), head_needle_counts_(heads) {}

  // One block's per-head metrics and stage times.
  void add(const std::vector<HeadMetrics>& heads, const std::vector<vk::StageTime>& times) {
    stages_.add(times);
    const double H = double(heads.size());
    MetricTriple block_mean;
    for (size_t h = 0; h < heads.size(); ++h) {
      head_sums_[h].coverage += heads[h].coverage;
      head_sums_[h].recall += heads[h].recall;
      head_sums_[h].output_error += heads[h].output_error;
      block_mean.coverage += heads[h].coverage / H;
      block_mean.recall += heads[h].recall / H;
      block_mean.output_error += heads[h].output_error / H;
      if (heads[h].needle_recall >= 0) {
        needle_sum_ += heads[h].needle_recall;
        ++needle_count_;
        head_needle_sums_[h] += heads[h].needle_recall;
        ++head_needle_counts_[h];
      }
    }
    per_block_.push_back(block_mean);
  }

  // The means over the blocks, into `row`.
  void fill(EvalRow& row) const {
    const double blocks = double(per_block_.size()), H = double(head_sums_.size());
    row.per_block = per_block_;
    for (const MetricTriple& sum : head_sums_) {
      const MetricTriple head{sum.coverage / blocks, sum.recall / blocks, sum.output_error / blocks};
      row.per_head.push_back(head);
      row.mean.coverage += head.coverage / H;
      row.mean.recall += head.recall / H;
      row.mean.output_error += head.output_error / H;
    }
    row.needle_recall = needle_count_ ? needle_sum_ / needle_count_ : -1;
    if (needle_count_)
      for (size_t h = 0; h < head_sums_.size(); ++h)
        row.per_head_needle.push_back(head_needle_counts_[h] ? head_needle_sums_[h] / head_needle_counts_[h] : -1);
    row.timings = stages_.medians();
  }

 private:
  std::vector<MetricTriple> head_sums_;
  std::vector<double> head_needle_sums_;
  std::vector<size_t> head_needle_counts_;
  double needle_sum_ = 0;
  size_t needle_count_ = 0;
  std::vector<MetricTriple> per_block_;
  StageSamples stages_;
};

// Dense's row at a budget: everything covered, nothing lost.
EvalRow dense_row(const Capture& capture, const CaptureLayer& layer, const EvalConfig& config, uint32_t budget,
                  const std::vector<uint32_t>& positions, const std::vector<vk::StageTime>& timings) {
  EvalRow row;
  row.method = "dense";
  row.budget = budget;
  row.mode = config.mode;
  row.layer = layer.index;
  row.mean = {1.0, 1.0, 0.0};
  if (capture.needle_span()) {
    row.needle_recall = 1.0;
    row.per_head_needle.assign(layer.shape.heads, 1.0);
  }
  row.per_head.assign(layer.shape.heads, row.mean);
  row.per_block.assign(positions.size(), row.mean);
  row.block_positions = positions;
  row.timings = timings;
  return row;
}

// A selection list per budget for a method: [rows, list_width(budget)].
std::vector<vk::Buffer> selection_lists(const vk::Device& device, const AttentionShape& shape, const Method& method,
                                        const std::vector<uint32_t>& budgets) {
  std::vector<vk::Buffer> lists;
  for (uint32_t b : budgets)
    lists.emplace_back(device, size_t(selection_rows(shape, method.granularity()).count) * method.list_width(b) * 4);
  return lists;
}

}  // namespace

std::vector<EvalRow> evaluate_layer(const vk::Device& device, const Capture& capture, const CaptureLayer& layer,
                                    const EvalConfig& config, const Progress& progress) {
  for (const std::string& m : config.methods)
    if (m != "dense") find_method(m);  // an unknown one, listing the known, before any upload
  if (config.budgets.empty()) throw InputError("no budget to evaluate", "budgets");
  for (uint32_t b : config.budgets)
    if (b == 0) throw InputError("a budget must be positive", "budgets");
  const AttentionShape& shape = layer.shape;
  const std::vector<Block> blocks = blocks_with_candidates(config.mode, shape.tokens, config.probes, config.chunk, config.last_chunks);
  const uint32_t max_queries = max_block_queries(config.mode, config.chunk);

  GpuLayer gpu(device, capture, layer);
  BlockQueries queries(device, layer, max_queries);
  Attention dense(device, shape, layer.dtype, Attention::Keys::dense, max_queries);
  Attention sparse(device, shape, layer.dtype, Attention::Keys::sparse, max_queries);
  SelectionMetrics metrics(device, shape);
  std::unique_ptr<Method> oracle = make_method(device, gpu, "oracle", config.options, config.mode, max_queries);
  const std::vector<vk::Buffer> oracle_lists = selection_lists(device, shape, *oracle, config.budgets);
  const StepReference reference_of_oracle{&dense, nullptr, selection_rows(shape, oracle->granularity()).heads_per_row,
                                          needle_of(capture)};

  // Each method but dense, with its lists and sums; the oracle's own row shares its object.
  struct Evaluated {
    std::string name;
    std::unique_ptr<ChoosingLayer> chooser;
    std::unique_ptr<Method> own;
    Method* method;
    std::vector<vk::Buffer> lists;
    std::vector<Accumulator> sums;  // by budget
  };
  std::vector<Evaluated> evaluated;
  for (const std::string& name : config.methods) {
    if (name == "dense") continue;
    Evaluated& e = evaluated.emplace_back();
    e.name = name;
    e.chooser = std::make_unique<ChoosingLayer>(device, capture, layer,
                                                *choosing_layer(capture, layer, name, config.options), max_queries);
    if (name != "oracle")
      e.own = make_method(device, e.chooser->or_else(gpu), name, config.options, config.mode, max_queries);
    e.method = e.own ? e.own.get() : oracle.get();
    e.lists = selection_lists(device, shape, *e.method, config.budgets);
    e.sums.assign(config.budgets.size(), Accumulator(shape.heads));
  }

  StageSamples dense_stages;
  for (size_t bi = 0; bi < blocks.size(); ++bi) {
    const Block& block = blocks[bi];
    queries.upload(block);
    const BlockInputs inputs{&queries.buffer(), &dense.log_sum_exp_buffer()};
    {
      vk::Pass pass(device);
      vk::Pass::PartScope part(pass, vk::Part::attention);
      dense.record(pass, gpu, {&queries.buffer(), block.n_queries, block.first_query}, "dense");
      pass.run();
      dense_stages.add(pass.stage_times());
    }
    {
      vk::Pass pass(device);
      for (size_t b = 0; b < config.budgets.size(); ++b) oracle->record(pass, block, inputs, config.budgets[b], oracle_lists[b]);
      pass.run();
    }
    for (Evaluated& e : evaluated) {
      const BlockInputs method_inputs = e.chooser->inputs(block, inputs);
      for (size_t b = 0; b < config.budgets.size(); ++b) {
        vk::Pass pass(device);
        StepReference reference = reference_of_oracle;
        reference.oracle_list = &oracle_lists[b];
        record_selection_step(pass, *e.method, gpu, block, method_inputs, config.budgets[b], e.lists[b], sparse, metrics,
                              reference, inputs.queries);
        pass.run();
        e.sums[b].add(metrics.read(), pass.stage_times());
      }
    }
    if (progress) progress(bi + 1, blocks.size());
  }

  std::vector<EvalRow> rows;
  std::vector<uint32_t> positions;
  for (const Block& b : blocks) positions.push_back(b.first_query);
  if (std::find(config.methods.begin(), config.methods.end(), "dense") != config.methods.end())
    for (uint32_t budget : config.budgets) rows.push_back(dense_row(capture, layer, config, budget, positions, dense_stages.medians()));
  for (const Evaluated& e : evaluated)
    for (size_t b = 0; b < config.budgets.size(); ++b) {
      EvalRow& row = rows.emplace_back();
      row.method = e.name;
      row.budget = config.budgets[b];
      row.mode = config.mode;
      row.layer = layer.index;
      row.granularity = e.method->granularity();
      row.params = e.method->params();
      row.block_positions = positions;
      e.sums[b].fill(row);
      row.build_timings = e.method->build_times();
    }
  return rows;
}

SelectionResult select_layer(const vk::Device& device, const Capture& capture, const CaptureLayer& layer,
                             const std::string& method_name, const MethodOptions& options, Mode mode, uint32_t budget,
                             uint32_t probes, uint32_t chunk, uint32_t last_chunks) {
  if (method_name == "dense") throw InputError("dense selects every causal key; choose a selection method", "method");
  find_method(method_name);  // an unknown one, listing the known, before any upload
  if (budget == 0) throw InputError("a budget must be positive", "budget");
  const AttentionShape& shape = layer.shape;
  const std::vector<Block> blocks = blocks_with_candidates(mode, shape.tokens, probes, chunk, last_chunks);
  const uint32_t max_queries = max_block_queries(mode, chunk);
  GpuLayer gpu(device, capture, layer);
  BlockQueries queries(device, layer, max_queries);
  Attention dense(device, shape, layer.dtype, Attention::Keys::dense, max_queries);
  const ChoosingLayer chooser(device, capture, layer, *choosing_layer(capture, layer, method_name, options), max_queries);
  std::unique_ptr<Method> method = make_method(device, chooser.or_else(gpu), method_name, options, mode, max_queries);

  SelectionResult result;
  result.method = method_name;
  result.mode = mode;
  result.budget = budget;
  result.granularity = method->granularity();
  result.params = method->params();
  result.rows = selection_rows(shape, result.granularity).count;
  result.width = method->list_width(budget);
  vk::Buffer list(device, size_t(result.rows) * result.width * 4);
  StageSamples stages;
  for (const Block& block : blocks) {
    queries.upload(block);
    vk::Pass pass(device);
    if (method->needs_dense_lse())  // e.g. the prefill oracle and TOVA read dense probabilities
      dense.record(pass, gpu, {&queries.buffer(), block.n_queries, block.first_query}, "dense");
    method->record(pass, block, chooser.inputs(block, {&queries.buffer(), &dense.log_sum_exp_buffer()}), budget, list);
    pass.run();
    stages.add(pass.stage_times());
    std::vector<int32_t> indices = list.download_values<int32_t>(size_t(result.rows) * result.width);
    result.indices.insert(result.indices.end(), indices.begin(), indices.end());
    result.block_positions.push_back(block.first_query);
  }
  result.timings = stages.medians();
  return result;
}

}  // namespace kv
