#include "evaluator.h"

#include <algorithm>
#include <map>

#include "attention.h"
#include "block_step.h"
#include "error.h"
#include "methods/table.h"
#include "selection_metrics.h"

namespace kv {
namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n == 0 ? 0 : n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Stage times of many runs, reduced to the median per stage in first-seen order.
class StageSamples {
 public:
  void add(const std::vector<vk::StageTime>& times) {
    for (const vk::StageTime& t : times) {
      if (!samples_.count(t.stage)) order_.push_back(t.stage);
      samples_[t.stage].push_back(t.milliseconds);
    }
  }
  std::vector<vk::StageTime> medians() const {
    std::vector<vk::StageTime> out;
    for (const std::string& stage : order_) out.push_back({stage, median(samples_.at(stage))});
    return out;
  }

 private:
  std::vector<std::string> order_;
  std::map<std::string, std::vector<double>> samples_;
};

struct Accumulator {
  double needle_sum = 0;
  size_t needle_count = 0;
  std::vector<double> head_needle_sums;
  std::vector<size_t> head_needle_counts;
  std::vector<MetricTriple> head_sums;
  std::vector<MetricTriple> per_block;
  StageSamples stages;
};

}  // namespace

std::vector<EvalRow> evaluate_layer(const vk::Device& device, const Capture& capture, const CaptureLayer& layer,
                                    const EvalConfig& config, const Progress& progress) {
  if (config.budgets.empty()) throw InputError("eval: --budgets is empty");
  for (uint32_t b : config.budgets)
    if (b == 0) throw InputError("eval: budgets must be positive");
  const AttentionShape& shape = layer.shape;
  const std::vector<Block> blocks = blocks_with_candidates(config.mode, shape.tokens, config.probes, config.chunk, config.last_chunks);
  const uint32_t max_queries = max_block_queries(config.mode, config.chunk);

  GpuLayer gpu(device, capture, layer);
  BlockQueries queries(device, layer, max_queries);
  Attention dense(device, shape, layer.dtype, Attention::Keys::dense, max_queries);
  std::unique_ptr<Method> oracle = make_method(device, gpu, "oracle", config.options, config.mode, max_queries);

  std::vector<std::string> names;
  std::vector<std::unique_ptr<Method>> methods;
  bool with_dense = false;
  for (const std::string& name : config.methods) {
    if (name == "dense") {
      with_dense = true;
      continue;
    }
    names.push_back(name);
    methods.push_back(name == "oracle" ? nullptr : make_method(device, gpu, name, config.options, config.mode, max_queries));
  }
  auto method_at = [&](size_t m) -> Method& { return methods[m] ? *methods[m] : *oracle; };

  Attention sparse(device, shape, layer.dtype, Attention::Keys::sparse, max_queries);
  SelectionMetrics metrics(device, shape);

  // Selection lists: the oracle's per budget, and each method's per budget.
  std::vector<vk::Buffer> oracle_lists;
  for (uint32_t b : config.budgets) oracle_lists.emplace_back(device, size_t(rows_of(shape, oracle->granularity())) * b * 4);
  std::vector<std::vector<vk::Buffer>> lists(methods.size());
  for (size_t m = 0; m < methods.size(); ++m)
    for (uint32_t b : config.budgets)
      lists[m].emplace_back(device, size_t(rows_of(shape, method_at(m).granularity())) * method_at(m).list_width(b) * 4);

  std::vector<Accumulator> accumulators(methods.size() * config.budgets.size());
  for (Accumulator& a : accumulators) {
    a.head_sums.resize(shape.heads);
    a.head_needle_sums.resize(shape.heads);
    a.head_needle_counts.resize(shape.heads);
  }
  StageSamples dense_stages;
  const uint32_t oracle_heads_per_row = heads_per_row(shape, oracle->granularity());
  const NeedleSpan needle = needle_of(capture);

  for (size_t bi = 0; bi < blocks.size(); ++bi) {
    const Block& block = blocks[bi];
    queries.upload(block);
    const BlockInputs inputs{&queries.buffer(), &dense.log_sum_exp_buffer()};
    {
      vk::Pass pass(device);
      dense.record(pass, gpu, {&queries.buffer(), block.n_queries, block.first_query}, "dense");
      pass.run();
      dense_stages.add(pass.stage_times());
    }
    {
      vk::Pass pass(device);
      for (size_t b = 0; b < config.budgets.size(); ++b) oracle->record(pass, block, inputs, config.budgets[b], oracle_lists[b]);
      pass.run();
    }
    for (size_t m = 0; m < methods.size(); ++m) {
      for (size_t b = 0; b < config.budgets.size(); ++b) {
        vk::Pass pass(device);
        record_selection_step(pass, method_at(m), gpu, block, inputs, config.budgets[b], lists[m][b], sparse, metrics,
                              {&dense, &oracle_lists[b], oracle_heads_per_row, needle});
        pass.run();
        Accumulator& a = accumulators[m * config.budgets.size() + b];
        a.stages.add(pass.stage_times());
        MetricTriple block_mean;
        std::vector<HeadMetrics> heads = metrics.read();
        for (uint32_t h = 0; h < shape.heads; ++h) {
          a.head_sums[h].coverage += heads[h].coverage;
          a.head_sums[h].recall += heads[h].recall;
          a.head_sums[h].output_error += heads[h].output_error;
          block_mean.coverage += heads[h].coverage / shape.heads;
          block_mean.recall += heads[h].recall / shape.heads;
          block_mean.output_error += heads[h].output_error / shape.heads;
          if (heads[h].needle_recall >= 0) {
            a.needle_sum += heads[h].needle_recall;
            ++a.needle_count;
            a.head_needle_sums[h] += heads[h].needle_recall;
            ++a.head_needle_counts[h];
          }
        }
        a.per_block.push_back(block_mean);
      }
    }
    if (progress) progress(bi + 1, blocks.size());
  }

  std::vector<EvalRow> rows;
  std::vector<uint32_t> positions;
  for (const Block& b : blocks) positions.push_back(b.first_query);
  if (with_dense) {
    for (uint32_t budget : config.budgets) {
      EvalRow row;
      row.method = "dense";
      row.budget = budget;
      row.mode = config.mode;
      row.layer = layer.index;
      row.mean = {1.0, 1.0, 0.0};
      if (capture.needle_span()) {
        row.needle_recall = 1.0;
        row.per_head_needle.assign(shape.heads, 1.0);
      }
      row.per_head.assign(shape.heads, row.mean);
      row.per_block.assign(blocks.size(), row.mean);
      row.block_positions = positions;
      row.timings = dense_stages.medians();
      rows.push_back(row);
    }
  }
  for (size_t m = 0; m < methods.size(); ++m) {
    for (size_t b = 0; b < config.budgets.size(); ++b) {
      const Accumulator& a = accumulators[m * config.budgets.size() + b];
      EvalRow row;
      row.method = names[m];
      row.budget = config.budgets[b];
      row.mode = config.mode;
      row.layer = layer.index;
      row.granularity = method_at(m).granularity();
      row.params = method_at(m).params();
      row.block_positions = positions;
      row.per_block = a.per_block;
      for (const MetricTriple& sum : a.head_sums) {
        MetricTriple head{sum.coverage / blocks.size(), sum.recall / blocks.size(), sum.output_error / blocks.size()};
        row.per_head.push_back(head);
        row.mean.coverage += head.coverage / shape.heads;
        row.mean.recall += head.recall / shape.heads;
        row.mean.output_error += head.output_error / shape.heads;
      }
      row.needle_recall = a.needle_count ? a.needle_sum / a.needle_count : -1;
      if (a.needle_count)
        for (uint32_t h = 0; h < shape.heads; ++h)
          row.per_head_needle.push_back(a.head_needle_counts[h] ? a.head_needle_sums[h] / a.head_needle_counts[h] : -1);
      row.timings = a.stages.medians();
      row.build_timings = method_at(m).build_times();
      rows.push_back(row);
    }
  }
  return rows;
}

SelectionResult select_layer(const vk::Device& device, const Capture& capture, const CaptureLayer& layer,
                             const std::string& method_name, const MethodOptions& options, Mode mode, uint32_t budget,
                             uint32_t probes, uint32_t chunk, uint32_t last_chunks) {
  if (budget == 0) throw InputError("select: --budget must be positive");
  const AttentionShape& shape = layer.shape;
  const std::vector<Block> blocks = blocks_with_candidates(mode, shape.tokens, probes, chunk, last_chunks);
  const uint32_t max_queries = max_block_queries(mode, chunk);
  GpuLayer gpu(device, capture, layer);
  BlockQueries queries(device, layer, max_queries);
  Attention dense(device, shape, layer.dtype, Attention::Keys::dense, max_queries);
  std::unique_ptr<Method> method = make_method(device, gpu, method_name, options, mode, max_queries);

  SelectionResult result;
  result.method = method_name;
  result.mode = mode;
  result.budget = budget;
  result.granularity = method->granularity();
  result.params = method->params();
  result.rows = rows_of(shape, result.granularity);
  result.width = method->list_width(budget);
  vk::Buffer list(device, size_t(result.rows) * result.width * 4);
  StageSamples stages;
  for (const Block& block : blocks) {
    queries.upload(block);
    vk::Pass pass(device);
    if (method->needs_dense_lse())  // e.g. the prefill oracle and TOVA read dense probabilities
      dense.record(pass, gpu, {&queries.buffer(), block.n_queries, block.first_query}, "dense");
    method->record(pass, block, {&queries.buffer(), &dense.log_sum_exp_buffer()}, budget, list);
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
