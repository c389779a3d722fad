#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "args.h"
#include "io/bundled.h"
#include "io/capture.h"
#include "commands.h"
#include "validation.h"
#include "base/error.h"
#include "eval/evaluator.h"
#include "output_files.h"
#include "method_args.h"
#include "methods/table.h"
#include "model/selection_plan.h"
#include "sweep_args.h"

namespace kv::cli {

const char* const kEvalHelp =
    "usage: kvscope eval [--capture FILE] [--layers L1,L2|all] [--methods M1,M2] [--budgets K1,K2]\n"
    "                    (--decode [--probes N] | --prefill [--chunk B] [--chunks N]) [method options]\n"
    "                    [--json OUT] [--csv OUT] [--results F.jsonl [--resume] [--shard I/N]]\n\n"
    "Sweeps methods x budgets (x layers) on the GPU and prints one row per method\n"
    "and budget (dense once a layer): coverage of dense attention mass, recall against the oracle's set,\n"
    "relative output error (means over heads and blocks), and median GPU time per\n"
    "block of the method's selection stages and of sparse attention over its set.\n"
    "Defaults: --layers all, --methods dense,oracle,quoka,quest,fier,streaming,\n"
    "--budgets 1%,3%,6%,12% (of the capture's length T; a budget is a key count\n"
    "or a percentage), --probes 64, --chunk 128, --chunks 0 (all chunks;\n"
    "N: the last N), --capture the bundled real passkey capture (llama-debian-5m,\n"
    "assets/real-passkey-4k.safetensors). Prefill chunk 0 has no past and is skipped.\n"
    "A last line names the method of most coverage at each budget (mean over layers).\n"
    "--json OUT writes docs/cli.md's metrics objects (per head and per block too); --csv OUT one line per row.\n"
    "When the capture records a needle (metadata needle_span), a `needle` column gives the\n"
    "fraction of the needle's tokens among the candidates that each method selected.\n"
    "A cell is a (layer, method, budget); a layer's cells share its references and form\n"
    "one slice of --shard, and run again together when a resumed run lacks any of them:\n"
    KVSCOPE_SWEEP_FILES_HELP;

namespace {

// GPU ms of the method's own stages (selection) and of attention over its set
// (dense's row: dense attention), by the part each was recorded as.
std::pair<double, double> split_timings(const EvalRow& row) {
  double select = 0, attention = 0;
  for (const vk::StageTime& t : row.timings) {
    if (t.part == vk::Part::selection) select += t.milliseconds;
    if (t.part == vk::Part::attention) attention += t.milliseconds;
  }
  return {select, attention};
}

nlohmann::json to_json(const EvalRow& row) {
  nlohmann::json j = {{"method", row.method}, {"budget", row.budget}, {"mode", mode_name(row.mode)},
                      {"layer", row.layer}, {"granularity", granularity_name(row.granularity)}, {"params", row.params},
                      {"coverage", row.mean.coverage}, {"recall", row.mean.recall},
                      {"output_error", row.mean.output_error}, {"blocks", row.block_positions.size()}};
  if (row.needle_recall >= 0) j["needle_recall"] = row.needle_recall;
  if (!row.per_head_needle.empty()) j["per_head"]["needle_recall"] = row.per_head_needle;
  for (const char* key : {"coverage", "recall", "output_error"}) {
    nlohmann::json per_head = nlohmann::json::array(), per_block = nlohmann::json::array();
    auto pick = [&](const MetricTriple& m) {
      return std::string(key) == "coverage" ? m.coverage : std::string(key) == "recall" ? m.recall : m.output_error;
    };
    for (const MetricTriple& m : row.per_head) per_head.push_back(pick(m));
    for (const MetricTriple& m : row.per_block) per_block.push_back(pick(m));
    j["per_head"][key] = per_head;
    j["per_block"][key] = per_block;
  }
  j["per_block"]["block_pos"] = row.block_positions;
  const auto [select_ms, attention_ms] = split_timings(row);
  j["select_ms"] = select_ms;
  j["attention_ms"] = attention_ms;
  j["timings_ms"] = nlohmann::json::object();
  for (const vk::StageTime& t : row.timings) j["timings_ms"][t.stage] = t.milliseconds;
  for (const vk::StageTime& t : row.build_timings) j["build_timings_ms"][t.stage] = t.milliseconds;
  return j;
}

// A one-line progress bar on stderr, shown once a sweep has run for a second, on terminals only.
class ProgressBar {
 public:
  explicit ProgressBar(std::string label) : label_(std::move(label)), start_(std::chrono::steady_clock::now()) {}
  ~ProgressBar() {
    if (shown_) std::fprintf(stderr, "\n");
  }
  void update(size_t done, size_t total) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (elapsed < 1.0 || !isatty(STDERR_FILENO)) return;
    shown_ = true;
    const int width = 30, filled = int(width * done / std::max<size_t>(total, 1));
    std::fprintf(stderr, "\r%s [%s%s] %zu/%zu blocks, %.0f s", label_.c_str(), std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), done, total, elapsed);
    std::fflush(stderr);
  }

 private:
  std::string label_;
  std::chrono::steady_clock::time_point start_;
  bool shown_ = false;
};

}  // namespace

namespace {

void print_eval_table(const vk::Device& device, const Capture& capture, const std::string& path, Mode mode,
                      const nlohmann::json& rows) {
  const bool needle = capture.needle_span().has_value();
  std::printf("device %s, capture %s, %s", device.info().name.c_str(), path.c_str(), mode_name(mode));
  if (needle) std::printf(", needle tokens [%u, %u)", capture.needle_span()->first, capture.needle_span()->second);
  std::printf("\n%-6s %-10s %7s %9s %8s %10s %s%11s %12s   %s\n", "layer", "method", "budget", "coverage", "recall",
              "out_error", needle ? "  needle " : "", "select_ms", "attention_ms", "stages (median GPU ms per block)");
  std::set<int> dense_shown;  // dense is the same at every budget: a row a layer
  // Which method covered most at each budget, its coverage averaged over the
  // layers (the oracle is the reference, not a contender).
  std::map<uint32_t, std::map<std::string, std::pair<double, int>>> coverage;  // budget -> method -> (sum, layers)
  for (const nlohmann::json& row : rows) {
    const std::string method = row.at("method").get<std::string>();
    const int layer = row.at("layer").get<int>();
    const uint32_t budget = row.at("budget").get<uint32_t>();
    const double row_coverage = row.at("coverage").get<double>();
    if (method != "dense" && method != "oracle") {
      auto& [sum, count] = coverage[budget][method];
      sum += row_coverage;
      ++count;
    }
    const bool dense = method == "dense";
    if (dense && !dense_shown.insert(layer).second) continue;
    std::string stages;
    for (const auto& [stage, ms] : row.at("timings_ms").items()) {
      if (stage == "metrics") continue;
      char text[96];
      std::snprintf(text, sizeof text, "%s%s %.4f", stages.empty() ? "" : ", ", stage.c_str(), ms.get<double>());
      stages += text;
    }
    char needle_text[16] = "";
    if (needle && row.contains("needle_recall"))
      std::snprintf(needle_text, sizeof needle_text, " %7.4f ", row.at("needle_recall").get<double>());
    else if (needle) std::snprintf(needle_text, sizeof needle_text, " %7s ", "-");
    std::printf("%-6d %-10s %7s %9.4f %8.4f %10.4f %s%11.4f %12.4f   %s\n", layer, method.c_str(),
                dense ? "-" : std::to_string(budget).c_str(), row_coverage, row.at("recall").get<double>(),
                row.at("output_error").get<double>(), needle_text, row.at("select_ms").get<double>(),
                row.at("attention_ms").get<double>(), stages.c_str());
  }
  std::string summary;
  for (const auto& [budget, methods] : coverage) {
    auto best = std::max_element(methods.begin(), methods.end(), [](const auto& a, const auto& b) {
      return a.second.first / a.second.second < b.second.first / b.second.second;
    });
    char text[96];
    std::snprintf(text, sizeof text, "%s%u keys: %s %.3f", summary.empty() ? "" : "; ", budget, best->first.c_str(),
                  best->second.first / best->second.second);
    summary += text;
  }
  if (!summary.empty()) std::printf("most coverage (mean over layers): %s\n", summary.c_str());
}

// The sweep's cells in the order evaluate_layer reports its rows: per layer
// (a group), dense at every budget, then each other method at each budget.
sweep::SweepCells eval_cells(const std::vector<const CaptureLayer*>& layers, const EvalConfig& config) {
  sweep::SweepCells cells;
  const bool dense = std::find(config.methods.begin(), config.methods.end(), "dense") != config.methods.end();
  for (const CaptureLayer* layer : layers) {
    const uint32_t group = uint32_t(cells.group_costs.size());
    auto key = [&](const std::string& method, uint32_t budget) {
      return nlohmann::json{{"layer", layer->index}, {"method", method}, {"budget", budget}};
    };
    if (dense)
      for (uint32_t budget : config.budgets) cells.add(key("dense", budget), group);
    for (const std::string& m : config.methods)
      if (m != "dense")
        for (uint32_t budget : config.budgets) cells.add(key(m, budget), group);
    cells.group_costs.push_back(1);
  }
  return cells;
}

}  // namespace

int run_eval(const GlobalOptions& global, const std::vector<std::string>& argv) {
  std::set<std::string> values = method_value_options();
  values.insert({"capture", "layers", "methods", "budgets", "json", "csv"});
  values.merge(results_value_options());
  std::set<std::string> flags = kModeFlags;
  flags.insert(kResumeFlag);
  Args args("eval", argv, values, flags);
  if (!args.positional().empty()) throw InputError("eval: unexpected argument '" + args.positional()[0] + "'");
  EvalConfig config;
  config.mode = parse_mode(args, "eval");
  config.options = parse_method_options(args);
  config.probes = args.count("probes", 64, 1);
  config.chunk = args.count("chunk", 128, 1, 4096);
  config.last_chunks = args.count("chunks", 0);
  config.methods = args.texts("methods", "dense,oracle,quoka,quest,fier,streaming");
  const std::vector<std::string> budget_texts = args.texts("budgets", "1%,3%,6%,12%");
  if (budget_texts.empty()) throw InputError("eval: --budgets is empty");
  const std::string json_path = args.text("json"), csv_path = args.text("csv");
  check_sweep_options(args, "eval");

  // The quick start's capture where none is given: the bundled real passkey capture, as the viewer opens.
  const std::string capture_path = args.text("capture", bundled_asset("real-passkey-4k.safetensors").string());
  Capture capture(capture_path);
  require_finite(capture, global.allow_nonfinite);
  for (const std::string& b : budget_texts) config.budgets.push_back(parse_budget(b, capture.tokens(), "eval: --budgets"));
  std::vector<const CaptureLayer*> layers;
  if (args.text("layers", "all") == "all") {
    for (const CaptureLayer& l : capture.layers()) layers.push_back(&l);
  } else {
    for (uint32_t index : args.counts("layers")) layers.push_back(&capture.layer(int(index)));
  }

  vk::Device device(global.device);
  const nlohmann::json config_json = {
      {"capture", capture_path}, {"mode", mode_name(config.mode)}, {"probes", config.probes}, {"chunk", config.chunk},
      {"chunks", config.last_chunks}, {"options", model::method_options_json(config.methods, config.options)},
      {"device", device.info().name}};
  const sweep::SweepCells cells = eval_cells(layers, config);
  const auto sweep = open_sweep(args, "eval", config_json, cells);
  std::map<std::string, size_t> cell_of;  // a cell's key as text -> its index
  for (size_t cell = 0; cell < cells.keys.size(); ++cell) cell_of[cells.keys[cell].dump()] = cell;
  for (size_t group = 0; group < layers.size(); ++group) {
    bool wanted = false;
    for (size_t cell = 0; cell < cells.keys.size(); ++cell) wanted |= cells.groups[cell] == group && sweep->wanted(cell);
    if (!wanted) continue;
    const CaptureLayer* layer = layers[group];
    ProgressBar bar("layer " + std::to_string(layer->index));
    for (const EvalRow& row :
         evaluate_layer(device, capture, *layer, config, [&](size_t done, size_t total) { bar.update(done, total); })) {
      const size_t cell = cell_of.at(nlohmann::json{{"layer", row.layer}, {"method", row.method}, {"budget", row.budget}}.dump());
      if (sweep->wanted(cell)) sweep->record(cell, to_json(row));
    }
  }

  print_eval_table(device, capture, capture_path, config.mode, sweep::report_json(sweep->header(), sweep->results()));
  write_sweep_reports(*sweep, {json_path, csv_path, ""});
  return exit_code(global, device, 0);
}

}  // namespace kv::cli
