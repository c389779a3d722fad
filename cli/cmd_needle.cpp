#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "args.h"
#include "commands.h"
#include "error.h"
#include "files.h"
#include "method_args.h"
#include "model/checkpoint.h"
#include "model/files.h"
#include "model/needle.h"
#include "model/tokenizer.h"
#include "needle_plot.h"
#include "validation.h"

namespace kv::cli {

const char* const kNeedleHelp =
    "usage: kvscope needle --model PATH [--tokenizer PATH] [--task passkey|kv] [--lengths L1,L2]\n"
    "                      [--depths D1,D2] [--samples N] [--methods M1,M2] [--budgets B1,B2]\n"
    "                      [--regime decode|prefill|both] [--prefill-budget B] [--dense-layers L1,L2]\n"
    "                      [--haystack-file F] [--chunk B] [--seed S] [method options]\n"
    "                      [--json OUT] [--csv OUT] [--plot OUT.png]\n\n"
    "Retrieval accuracy with each method inside the model: for every length and\n"
    "depth, --samples prompts (each with its own key, from --seed) are run with\n"
    "every method and budget in the regime asked, the answer generated greedily\n"
    "and scored by exact match of the key.\n"
    "  --task passkey     the passkey prompt of tools/capture_qkv.py (default)\n"
    "  --task kv          \"The special magic number for WORD is NNNNNNN.\" hidden in\n"
    "                     --haystack-file's text (default assets/text/licenses.txt),\n"
    "                     then asked for\n"
    "  --lengths          prompt plus answer, in tokens (default 2048); 16 are left for the answer\n"
    "  --depths           where the needle sits, 0..1 (default 0.1,0.3,0.5,0.7,0.9)\n"
    "  --methods          dense and any method a model run can feed (default dense,quest,fier,streaming)\n"
    "  --budgets          keys a method keeps (default 64,256,1024)\n"
    "  --regime decode    the method in every decode step after a dense prefill (default);\n"
    "                     prefill: in every prefill chunk, dense decode; both: in both,\n"
    "                     prefill at --prefill-budget (default: the same budget)\n"
    "The first answer token comes from the prompt's last position, as in the papers:\n"
    "in the decode regime the method acts from the second answer token on. Dense runs\n"
    "once per prompt. --json: one object per (task, length, depth, method, budget,\n"
    "regime) with accuracy, samples and the answers; --csv the same without answers;\n"
    "--plot a PNG of accuracy over length x depth per method and budget, and of\n"
    "accuracy against the budget per method.\n";

namespace {

std::vector<double> parse_depths(const std::string& text) {
  std::vector<double> depths;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    char* end = nullptr;
    const double d = std::strtod(item.c_str(), &end);
    if (item.empty() || *end || !(d >= 0 && d <= 1)) throw InputError("needle: --depths takes numbers in [0, 1], not '" + item + "'");
    depths.push_back(d);
  }
  if (depths.empty()) throw InputError("needle: --depths is empty");
  return depths;
}

void progress(size_t done, size_t total, std::chrono::steady_clock::time_point start) {
  if (!isatty(STDERR_FILENO)) return;
  const int width = 30, filled = int(width * done / std::max<size_t>(total, 1));
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "\rneedle [%s%s] %zu/%zu runs, %.0f s", std::string(size_t(filled), '#').c_str(),
               std::string(size_t(width - filled), '.').c_str(), done, total, elapsed);
  if (done == total) std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace

int run_needle(const GlobalOptions& global, const std::vector<std::string>& argv) {
  std::set<std::string> values{"model",  "tokenizer",     "task",  "lengths", "depths", "samples", "regime",
                               "prefill-budget", "haystack-file", "chunk", "seed",    "json",   "csv",     "plot"};
  values.merge(sweep_value_options());
  Args args("needle", argv, values, {});
  if (!args.positional().empty()) throw InputError("needle: unexpected argument '" + args.positional()[0] + "'");
  const std::filesystem::path model_path = args.required("model");
  model::NeedleConfig config;
  const std::string task = args.text("task", "passkey");
  if (task != "passkey" && task != "kv") throw InputError("needle: --task is passkey or kv, not '" + task + "'");
  config.task = task == "kv" ? model::NeedleTask::kv : model::NeedleTask::passkey;
  config.lengths = args.has("lengths") ? args.counts("lengths") : std::vector<uint32_t>{2048};
  for (uint32_t l : config.lengths)
    if (l < 64 || l > (1u << 20)) throw InputError("needle: --lengths must be between 64 and 1048576 tokens");
  config.depths = parse_depths(args.text("depths", "0.1,0.3,0.5,0.7,0.9"));
  config.samples = args.count("samples", 1, 1, 1000);
  const MethodSweepArgs sweep = parse_method_sweep(args, "needle", "dense,quest,fier,streaming", {64, 256, 1024});
  config.methods = sweep.methods;
  config.budgets = sweep.budgets;
  config.dense_layers = sweep.dense_layers;
  config.options = sweep.options;
  const std::string regime = args.text("regime", "decode");
  if (regime == "decode") config.regimes = {model::NeedleRegime::decode};
  else if (regime == "prefill") config.regimes = {model::NeedleRegime::prefill};
  else if (regime == "both") config.regimes = {model::NeedleRegime::both};
  else throw InputError("needle: --regime is decode, prefill or both, not '" + regime + "'");
  config.prefill_budget = args.count("prefill-budget", 0, 1);
  config.chunk = args.count("chunk", 128, 1, 4096);
  config.seed = args.count("seed", 0);
  if (config.task == model::NeedleTask::kv)
    config.haystack = model::read_text_file(args.text("haystack-file", KVSCOPE_DEFAULT_HAYSTACK));
  const std::string json_path = args.text("json", ""), csv_path = args.text("csv", ""), plot_path = args.text("plot", "");
  for (const std::string& path : {json_path, csv_path, plot_path})
    if (!path.empty()) require_output_folder(path);

  const model::Checkpoint checkpoint = model::Checkpoint::open(model_path);
  const auto tokenizer = open_model_tokenizer(args, model_path, checkpoint);
  vk::Device device(global.device);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<model::NeedleResult> results = model::run_needle(
      device, checkpoint, *tokenizer, config, [&](size_t done, size_t total) { progress(done, total, start); });

  std::printf("needle: %s, model %s, device %s\n", task.c_str(), model_path.string().c_str(), device.info().name.c_str());
  std::printf("%-8s %-6s %-16s %7s %-8s %9s %s\n", "length", "depth", "method", "budget", "regime", "accuracy", "answers");
  for (const model::NeedleResult& r : results) {
    std::string answers;
    for (const std::string& a : r.answers) answers += (answers.empty() ? "'" : ", '") + a + "'";
    std::printf("%-8u %-6.2f %-16s %7s %-8s %9.3f %s\n", r.length, r.depth, r.method.c_str(),
                r.budget ? std::to_string(r.budget).c_str() : "-", r.method == "dense" ? "-" : model::needle_regime_name(r.regime),
                r.accuracy(), answers.c_str());
  }
  if (!json_path.empty()) {
    nlohmann::json all = nlohmann::json::array();
    for (const model::NeedleResult& r : results)
      all.push_back({{"task", task}, {"length", r.length}, {"depth", r.depth}, {"method", r.method},
                     {"budget", r.budget}, {"regime", r.method == "dense" ? "dense" : model::needle_regime_name(r.regime)},
                     {"accuracy", r.accuracy()}, {"correct", r.correct}, {"samples", r.samples}, {"answers", r.answers}});
    nlohmann::json j = {{"model", model_path.string()}, {"tokenizer", args.text("tokenizer", "")},
                        {"haystack_file", config.task == model::NeedleTask::kv ? args.text("haystack-file", KVSCOPE_DEFAULT_HAYSTACK) : ""},
                        {"device", device.info().name}, {"task", task},
                        {"options", method_options_json(config.methods, config.options)}, {"dense_layers", config.dense_layers},
                        {"chunk", config.chunk}, {"seed", config.seed}, {"results", all}};
    write_text_atomically(json_path, j.dump(1) + "\n");
  }
  if (!csv_path.empty()) {
    std::string csv = "task,length,depth,method,budget,regime,accuracy,correct,samples\n";
    for (const model::NeedleResult& r : results) {
      char line[256];
      std::snprintf(line, sizeof line, "%s,%u,%.4g,%s,%u,%s,%.6g,%u,%u\n", task.c_str(), r.length, r.depth, r.method.c_str(),
                    r.budget, r.method == "dense" ? "dense" : model::needle_regime_name(r.regime), r.accuracy(), r.correct,
                    r.samples);
      csv += line;
    }
    write_text_atomically(csv_path, csv);
  }
  if (!plot_path.empty()) write_needle_plot(plot_path, task, results);
  return exit_code(global, device, 0);
}

}  // namespace kv::cli
