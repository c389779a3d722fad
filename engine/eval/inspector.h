#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "eval/evaluator.h"
#include "io/capture.h"
#include "kernels/attention.h"
#include "kernels/query_stats_kernel.h"
#include "kernels/selection_metrics.h"
#include "methods/block_step.h"
#include "methods/method.h"

namespace kv {

// Everything about one method's selection on one block: what it picked, what
// the oracle picked, the dense attention mass and the method's scores behind
// each key, per-head metrics and per-stage GPU times.
struct Inspection {
  Block block;
  uint32_t budget = 0;
  Granularity granularity = Granularity::kv_head;
  uint32_t rows = 0, width = 0;
  std::vector<int32_t> selection;  // [rows, width], ascending, -1 padded
  Granularity oracle_granularity = Granularity::kv_head;
  uint32_t oracle_rows = 0;
  std::vector<int32_t> oracle;  // [oracle_rows, budget]
  // Dense attention probability of every candidate key, per query head [H, candidates]:
  // decode p_{h,t,j}; prefill, the KV head's mass averaged over its heads and the chunk's queries.
  std::vector<float> key_mass;
  ScoreView score_layout;          // buffer pointer is not valid after inspect()
  std::vector<float> method_scores;  // [score_layout.rows, score_layout.stride], if the method scores
  std::vector<HeadMetrics> heads;
  std::vector<vk::StageTime> method_times;  // the method's stages and sparse attention over its set
  std::vector<vk::StageTime> dense_times;
};

// Runs one method on one block at a time, through the same kernels as eval;
// the viewer's engine entry point.
class Inspector {
 public:
  Inspector(const vk::Device& device, const Capture& capture, int layer, Mode mode, uint32_t chunk);
  Inspection inspect(const Block& block, const std::string& method, const MethodOptions& options, uint32_t budget);
  // The blocks the viewer's curves average over: the last 4 probes or 2 chunks.
  std::vector<Block> curve_blocks() const;
  // One point of a recall-vs-budget curve: metric means over `blocks` and heads.
  // One point costs one submission per block (dense attention of each block is
  // kept between calls), so the viewer can spread a sweep over frames.
  MetricTriple curve_point(const std::vector<Block>& blocks, const std::string& method, const MethodOptions& options,
                           uint32_t budget);
  // The cosine panel's statistics of one head's chunk, on the GPU.
  QueryStats query_stats(uint32_t head, const Block& block, uint32_t n_q);

  // Whether the capture holds the layer that chooses `method`'s set for this
  // one (LessIsMore's reusing layers choose at another: methods/table.h).
  bool can_select(const std::string& method, const MethodOptions& options) const;

  const CaptureLayer& layer() const { return layer_; }
  Mode mode() const { return mode_; }
  uint32_t chunk() const { return chunk_; }

 private:
  // A method built for this layer, and where its set is chosen.
  struct Built {
    std::unique_ptr<ChoosingLayer> chooser;
    std::unique_ptr<Method> method;
  };
  Built& method(const std::string& name, const MethodOptions& options);

  // A block of the curves with its queries and dense attention on the device.
  struct CurveBlock {
    CurveBlock(const vk::Device& device, const CaptureLayer& layer, uint32_t max_queries);
    Block block;
    BlockQueries queries;
    Attention dense;
  };

  const vk::Device& device_;
  const Capture& capture_;
  const CaptureLayer& layer_;
  Mode mode_;
  uint32_t chunk_;
  GpuLayer gpu_;
  BlockQueries queries_;
  Attention dense_;
  Attention sparse_;
  SelectionMetrics metrics_;
  std::unique_ptr<Method> oracle_;
  vk::Buffer selection_, oracle_list_;  // grow to the largest request, rewritten per call
  std::vector<std::unique_ptr<CurveBlock>> curve_blocks_;
  std::unique_ptr<QueryStatistics> query_statistics_;
  // Methods built so far, by name and parameters: pipelines and per-cache metadata
  // are built once per choice, so switching back is immediate.
  std::map<std::string, Built> methods_;
  Built oracle_built_;  // the oracle, chosen at this layer
};

}  // namespace kv
