#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "args.h"
#include "io/capture.h"
#include "commands.h"
#include "base/error.h"
#include "eval/inspector.h"
#include "method_args.h"
#include "methods/table.h"
#include "kernels/query_stats.h"
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

namespace {

struct InspectArgs {
  Mode mode = Mode::decode;
  MethodOptions options;
  std::string method, capture;
  uint32_t budget = 0, repeat = 20, chunk = 128, probes = 64;
  std::optional<uint32_t> layer, block;
};

InspectArgs parse_inspect_args(const Args& args) {
  if (!args.positional().empty()) throw InputError("inspect: unexpected argument '" + args.positional()[0] + "'");
  InspectArgs a;
  a.mode = parse_mode(args, "inspect");
  a.options = parse_method_options(args);
  a.method = args.required("method");
  find_method(a.method);  // refuses an unknown one, listing the known
  a.budget = args.required_count("budget", 1, 1u << 20);
  a.repeat = args.count("repeat", 20, 1, 100000);
  a.chunk = args.count("chunk", 128, 1, 4096);
  a.probes = args.count("probes", 64, 1);
  a.capture = args.required("capture");
  if (args.has("layer")) a.layer = args.count("layer", 0, 0, 1u << 20);
  if (args.has("block")) a.block = args.count("block", 0);
  return a;
}

// What the viewer pays for a change, in wall-clock seconds.
struct InspectCosts {
  double first = 0, again = 0;            // an inspection of the block: the first, then the median of repeats
  double stats = 0;                       // the block's query statistics (pipeline built)
  double first_point = 0, point = 0;      // a recall-curve point: the first (with dense), then the median
  size_t stats_queries = 0, curve_blocks = 0;
};

InspectCosts time_inspection(Inspector& inspector, const InspectArgs& a, const Block& block, uint32_t tokens,
                             Inspection& result) {
  InspectCosts c;
  auto start = std::chrono::steady_clock::now();
  result = inspector.inspect(block, a.method, a.options, a.budget);
  c.first = seconds_since(start);
  std::vector<double> again;
  for (uint32_t i = 0; i < a.repeat; ++i) {
    start = std::chrono::steady_clock::now();
    result = inspector.inspect(block, a.method, a.options, a.budget);
    again.push_back(seconds_since(start));
  }
  std::sort(again.begin(), again.end());
  c.again = again[again.size() / 2];
  inspector.query_stats(0, block, a.options.n_q);  // the first call builds the pipeline
  start = std::chrono::steady_clock::now();
  c.stats_queries = inspector.query_stats(0, block, a.options.n_q).cosine.size();
  c.stats = seconds_since(start);
  // The viewer's recall curves for this method: the first point also runs dense
  // attention on every curve block, later points only the method.
  const std::vector<Block> curve_blocks = inspector.curve_blocks();
  c.curve_blocks = curve_blocks.size();
  std::vector<double> points;
  for (uint32_t b = 16; b <= std::min<uint32_t>(4096, tokens); b *= 2) {
    start = std::chrono::steady_clock::now();
    inspector.curve_point(curve_blocks, a.method, a.options, b);
    points.push_back(seconds_since(start));
  }
  c.first_point = points.front();
  std::sort(points.begin() + 1, points.end());
  c.point = points.size() > 1 ? points[1 + (points.size() - 1) / 2] : c.first_point;
  return c;
}

nlohmann::json inspect_json(const InspectArgs& a, const std::string& device, int layer, const Block& block,
                            const Inspection& result, const InspectCosts& c) {
  double coverage = 0, recall = 0, error = 0;
  for (const HeadMetrics& h : result.heads) {
    coverage += h.coverage / result.heads.size();
    recall += h.recall / result.heads.size();
    error += h.output_error / result.heads.size();
  }
  nlohmann::json report = {{"device", device}, {"method", a.method}, {"mode", mode_name(a.mode)},
                           {"budget", a.budget}, {"layer", layer}, {"block_pos", block.first_query},
                           {"coverage", coverage}, {"recall", recall}, {"output_error", error},
                           {"first_inspection_ms", c.first * 1e3}, {"inspection_ms", c.again * 1e3},
                           {"query_stats_ms", c.stats * 1e3}, {"query_stats_queries", c.stats_queries},
                           {"first_curve_point_ms", c.first_point * 1e3}, {"curve_point_ms", c.point * 1e3}};
  for (const vk::StageTime& t : result.method_times) report["timings_ms"][t.stage] = t.milliseconds;
  for (const vk::StageTime& t : result.dense_times) report["timings_ms"][t.stage] = t.milliseconds;
  return report;
}

void print_inspection(const InspectArgs& a, const nlohmann::json& r, const InspectCosts& c) {
  std::printf("device %s; %s %s, budget %u, layer %d, block at %u\n", r["device"].get<std::string>().c_str(), a.method.c_str(),
              mode_name(a.mode), a.budget, r["layer"].get<int>(), r["block_pos"].get<uint32_t>());
  std::printf("coverage %.4f  recall %.4f  output error %.4f (means over heads)\n", r["coverage"].get<double>(),
              r["recall"].get<double>(), r["output_error"].get<double>());
  std::printf("wall clock: first inspection %.1f ms, then %.2f ms (median of %u); query statistics of %zu queries %.1f ms\n",
              c.first * 1e3, c.again * 1e3, a.repeat, c.stats_queries, c.stats * 1e3);
  std::printf("recall-curve points (%zu blocks): first %.1f ms, then %.2f ms (median)\n", c.curve_blocks, c.first_point * 1e3,
              c.point * 1e3);
}

}  // namespace

int run_inspect(const GlobalOptions& global, const std::vector<std::string>& argv) {
  std::set<std::string> values = method_value_options();
  values.insert({"capture", "layer", "block", "method", "budget", "repeat"});
  std::set<std::string> flags = kModeFlags;
  flags.insert("json");
  const Args args("inspect", argv, values, flags);
  const InspectArgs a = parse_inspect_args(args);
  Capture capture(a.capture);
  require_finite(capture, global.allow_nonfinite);
  const int layer = a.layer ? int(*a.layer) : capture.layers().front().index;
  capture.layer(layer);
  const std::vector<Block> blocks = blocks_with_candidates(a.mode, capture.tokens(), a.probes, a.chunk);
  const uint32_t last = uint32_t(blocks.size() - 1);
  if (a.block && *a.block > last)
    throw InputError("inspect: --block must be between 0 and " + std::to_string(last));
  const Block block = blocks[a.block.value_or(last)];

  vk::Device device(global.device);
  Inspector inspector(device, capture, layer, a.mode, a.chunk);
  Inspection result;
  const InspectCosts costs = time_inspection(inspector, a, block, capture.tokens(), result);
  const nlohmann::json report = inspect_json(a, device.info().name, layer, block, result, costs);
  if (args.flag("json")) std::printf("%s\n", report.dump(2).c_str());
  else print_inspection(a, report, costs);
  return exit_code(global, device, 0);
}

}  // namespace kv::cli
