#pragma once
// Room eval/: methods on captures (eval, inspect, bench), as the CLI, the viewer
// and Python drive them; it includes base/ to methods/ and the other top rooms (model/, ruler/, sweep/).
#include <functional>
#include <string>
#include <vector>

#include "io/capture.h"
#include "methods/method.h"
#include "vk/pass.h"

namespace kv {

struct EvalConfig {
  Mode mode = Mode::decode;
  uint32_t probes = 64;  // decode: the last `probes` positions
  uint32_t chunk = 128;  // prefill: B_CP
  uint32_t last_chunks = 0;  // prefill: only the last N chunks; 0 = all
  std::vector<std::string> methods;  // "dense" and any of method_table()
  std::vector<uint32_t> budgets;
  MethodOptions options;
};

struct MetricTriple {
  double coverage = 0, recall = 0, output_error = 0;
};

// One (method, budget) of one layer: metric means over heads and blocks, per
// query head (mean over blocks) and per block (mean over heads), and the GPU
// time of each stage (median over blocks).
struct EvalRow {
  std::string method;
  uint32_t budget = 0;
  Mode mode = Mode::decode;
  int layer = 0;
  Granularity granularity = Granularity::kv_head;
  nlohmann::json params = nlohmann::json::object();
  MetricTriple mean;
  // Mean fraction of the needle's candidate tokens selected, over heads and the
  // blocks where the needle lies among the candidates; -1 without a needle.
  double needle_recall = -1;
  std::vector<double> per_head_needle;  // the same per query head; empty without a needle
  std::vector<MetricTriple> per_head;
  std::vector<MetricTriple> per_block;
  std::vector<uint32_t> block_positions;
  std::vector<vk::StageTime> timings;        // per block, median
  std::vector<vk::StageTime> build_timings;  // once per cache (Quest pages, Fier bits)
};

// Called after each block: (blocks done, blocks in all).
using Progress = std::function<void(size_t, size_t)>;

// Runs every method at every budget on every block of the layer on the GPU:
// dense attention, the oracle (for recall), each method's stages, sparse
// attention over its selection, and the metrics. Blocks with no candidate keys
// (prefill chunk 0) are skipped.
std::vector<EvalRow> evaluate_layer(const vk::Device& device, const Capture& capture, const CaptureLayer& layer,
                                    const EvalConfig& config, const Progress& progress = {});

// The selection of one method at one budget for every block, as docs/cli.md's selection file holds it.
struct SelectionResult {
  std::string method;
  Mode mode = Mode::decode;
  uint32_t budget = 0;
  Granularity granularity = Granularity::kv_head;
  nlohmann::json params;
  uint32_t rows = 0;
  uint32_t width = 0;
  std::vector<uint32_t> block_positions;
  std::vector<int32_t> indices;  // [blocks, rows, width]
  std::vector<vk::StageTime> timings;  // median over blocks
};

SelectionResult select_layer(const vk::Device& device, const Capture& capture, const CaptureLayer& layer,
                             const std::string& method, const MethodOptions& options, Mode mode, uint32_t budget,
                             uint32_t probes, uint32_t chunk, uint32_t last_chunks = 0);

}  // namespace kv
