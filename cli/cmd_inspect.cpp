#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "args.h"
#include "capture.h"
#include "commands.h"
#include "error.h"
#include "inspector.h"
#include "method_args.h"
#include "methods/table.h"
#include "query_stats.h"
#include "validation.h"

namespace kv::cli {

const char* const kInspectHelp =
    "usage: kvscope inspect --capture FILE [--layer L] (--decode [--probes N] | --prefill [--chunk B])\n"
    "                       [--block I] --method M --budget K [method options] [--repeat N] [--json]\n\n"
    "Runs what the viewer runs when a setting changes, for one block (default: the\n"
    "last probe or chunk): dense attention, the oracle, the method, sparse attention\n"
    "and metrics on the GPU, then the chunk's query statistics (cosine to the mean\n"
    "query, keys for 90% of the mass) and the method's recall-curve points. Prints\n"
    "the block's metrics and the wall-clock cost: the first inspection (builds\n"
    "pipelines and per-cache metadata), the median of --repeat (default 20) repeated\n"
    "ones, the query statistics, and a curve point (budgets 16..4096).\n";

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int run_inspect(const GlobalOptions& global, const std::vector<std::string>& argv) {
  std::set<std::string> values = method_value_options();
  values.insert({"capture", "layer", "block", "method", "budget", "repeat"});
  std::set<std::string> flags = kModeFlags;
  flags.insert("json");
  Args args("inspect", argv, values, flags);
  if (!args.positional().empty()) throw InputError("inspect: unexpected argument '" + args.positional()[0] + "'");
  const Mode mode = parse_mode(args, "inspect");
  const MethodOptions options = parse_method_options(args);
  const std::string method = args.required("method");
  find_method(method);  // refuses an unknown one, listing the known
  const uint32_t budget = args.required_count("budget", 1, 1u << 20), repeat = args.count("repeat", 20, 1, 100000);
  const uint32_t chunk = args.count("chunk", 128, 1, 4096);
  Capture capture(args.required("capture"));
  require_finite(capture, global.allow_nonfinite);
  const int layer = args.has("layer") ? int(args.count("layer", 0, 0, 1u << 20)) : capture.layers().front().index;
  capture.layer(layer);
  const std::vector<Block> blocks = blocks_with_candidates(mode, capture.tokens(), args.count("probes", 64, 1), chunk);
  const uint32_t index = args.count("block", uint32_t(blocks.size() - 1), 0, uint32_t(blocks.size() - 1));
  const Block block = blocks[index];

  vk::Device device(global.device);
  Inspector inspector(device, capture, layer, mode, chunk);
  auto start = std::chrono::steady_clock::now();
  Inspection result = inspector.inspect(block, method, options, budget);
  const double first = seconds_since(start);
  std::vector<double> again;
  for (uint32_t i = 0; i < repeat; ++i) {
    start = std::chrono::steady_clock::now();
    result = inspector.inspect(block, method, options, budget);
    again.push_back(seconds_since(start));
  }
  std::sort(again.begin(), again.end());
  inspector.query_stats(0, block, options.n_q);  // the first call builds the pipeline
  start = std::chrono::steady_clock::now();
  QueryStats stats = inspector.query_stats(0, block, options.n_q);
  const double stats_seconds = seconds_since(start);
  // The viewer's recall curves for this method: the first point also runs dense
  // attention on every curve block, later points only the method.
  const std::vector<Block> curve_blocks = inspector.curve_blocks();
  std::vector<double> points;
  for (uint32_t b = 16; b <= std::min<uint32_t>(4096, capture.tokens()); b *= 2) {
    start = std::chrono::steady_clock::now();
    inspector.curve_point(curve_blocks, method, options, b);
    points.push_back(seconds_since(start));
  }
  const double first_point = points.front();
  std::sort(points.begin() + 1, points.end());
  const double point = points.size() > 1 ? points[1 + (points.size() - 1) / 2] : first_point;

  double coverage = 0, recall = 0, error = 0;
  for (const HeadMetrics& h : result.heads) {
    coverage += h.coverage / result.heads.size();
    recall += h.recall / result.heads.size();
    error += h.output_error / result.heads.size();
  }
  nlohmann::json report = {{"device", device.info().name}, {"method", method}, {"mode", mode_name(mode)},
                           {"budget", budget}, {"layer", layer}, {"block_pos", block.first_query},
                           {"coverage", coverage}, {"recall", recall}, {"output_error", error},
                           {"first_inspection_ms", first * 1e3}, {"inspection_ms", again[again.size() / 2] * 1e3},
                           {"query_stats_ms", stats_seconds * 1e3}, {"query_stats_queries", stats.cosine.size()},
                           {"first_curve_point_ms", first_point * 1e3}, {"curve_point_ms", point * 1e3}};
  for (const vk::StageTime& t : result.method_times) report["timings_ms"][t.stage] = t.milliseconds;
  for (const vk::StageTime& t : result.dense_times) report["timings_ms"][t.stage] = t.milliseconds;
  if (args.flag("json")) {
    std::printf("%s\n", report.dump(2).c_str());
  } else {
    std::printf("device %s; %s %s, budget %u, layer %d, block at %u\n", device.info().name.c_str(), method.c_str(),
                mode_name(mode), budget, layer, block.first_query);
    std::printf("coverage %.4f  recall %.4f  output error %.4f (means over heads)\n", coverage, recall, error);
    std::printf("wall clock: first inspection %.1f ms, then %.2f ms (median of %u); query statistics of %zu queries %.1f ms\n",
                first * 1e3, again[again.size() / 2] * 1e3, repeat, stats.cosine.size(), stats_seconds * 1e3);
    std::printf("recall-curve points (%zu blocks): first %.1f ms, then %.2f ms (median)\n", curve_blocks.size(),
                first_point * 1e3, point * 1e3);
  }
  return exit_code(global, device, 0);
}

}  // namespace kv::cli
