#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "args.h"
#include "io/bundled.h"
#include "commands.h"
#include "base/error.h"
#include "output_files.h"
#include "method_args.h"
#include "model/checkpoint.h"
#include "model/files.h"
#include "model/needle.h"
#include "model/tokenizer.h"
#include "sweep_args.h"
#include "validation.h"

namespace kv::cli {

const char* const kNeedleHelp =
    "usage: kvscope needle --model PATH [--tokenizer PATH] [--task passkey|kv] [--lengths L1,L2]\n"
    "                      [--depths D1,D2] [--samples N] [--methods M1,M2] [--budgets B1,B2]\n"
    "                      [--regime decode|prefill|both] [--prefill-budget B] [--dense-layers L1,L2]\n"
    "                      [--haystack-file F] [--chunk B] [--seed S] [method options]\n"
    "                      [--json OUT] [--csv OUT] [--plot OUT.png] [--results F.jsonl [--resume] [--shard I/N]]\n\n"
    "Retrieval accuracy with each method inside the model: for every length and\n"
    "depth, --samples prompts (each with its own key, from --seed) are run with\n"
    "every method and budget in the regime asked, the answer generated greedily\n"
    "and scored by exact match of the key.\n"
    "  --task passkey     the passkey prompt of tools/export/capture_qkv.py (default)\n"
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
    "accuracy against the budget per method. A cell is a (length, depth, method, budget);\n"
    "the cells of a (length, depth) share its prompts and form one slice of --shard:\n"
    KVSCOPE_SWEEP_FILES_HELP "\n"
    "  --random-weights   --model is a config.json (or its folder), weights drawn on the\n"
    "                     device from --seed: speed at a model's real size (docs/model.md)\n"
    "  --weight-type T    the matrices as ggml blocks of T: q8_0, q4_0, q4_1, q5_0, q5_1,\n"
    "                     q2_k .. q6_k, q4_k_m, q5_k_m (drawn so, or quantized at load), or f16\n"
    "  --chat             wrap each prompt as the model's chat template wraps one user\n"
    "                     turn (the format its tokenizer_config.json's or GGUF's\n"
    "                     template holds: llama3, chatml, inst or vicuna)\n"
    "  --chat-format NAME the same in that format, whatever the template\n";
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

namespace {

struct NeedleArgs {
  std::filesystem::path model;
  std::string haystack_file;  // kv: the file it came from
  model::NeedleConfig config;
  std::string json, csv, plot;
};

NeedleArgs parse_needle_args(const Args& args) {
  if (!args.positional().empty()) throw InputError("needle: unexpected argument '" + args.positional()[0] + "'");
  NeedleArgs a;
  a.model = args.required("model");
  model::NeedlePrompts& p = a.config.prompts;
  p.task = model::parse_needle_task(args.text("task", "passkey"));
  p.lengths = args.has("lengths") ? args.counts("lengths") : std::vector<uint32_t>{2048};
  for (uint32_t l : p.lengths)
    if (l < 64 || l > (1u << 20)) throw InputError("needle: --lengths must be between 64 and 1048576 tokens");
  p.depths = parse_depths(args.text("depths", "0.1,0.3,0.5,0.7,0.9"));
  p.samples = args.count("samples", 1, 1, 1000);
  p.seed = args.count("seed", 0);
  if (p.task == model::NeedleTask::kv) {
    a.haystack_file = args.text("haystack-file", bundled_asset("text/licenses.txt").string());
    p.haystack = model::read_text_file(a.haystack_file);
  }
  a.config.sweep = parse_method_sweep(args, parse_regime(args, model::Regime::decode), "dense,quest,fier,streaming",
                                      {64, 256, 1024});
  a.config.chunk = args.count("chunk", 128, 1, kMaxChunk);
  a.json = args.text("json", "");
  a.csv = args.text("csv", "");
  a.plot = args.text("plot", "");
  for (const std::string& path : {a.json, a.csv, a.plot})
    if (!path.empty()) require_output_folder(path);
  return a;
}

void print_needle_table(const std::vector<model::NeedleResult>& results) {
  std::printf("%-8s %-6s %-16s %7s %-8s %9s %s\n", "length", "depth", "method", "budget", "regime", "accuracy", "answers");
  for (const model::NeedleResult& r : results) {
    std::string answers;
    for (const std::string& a : r.answers) answers += (answers.empty() ? "'" : ", '") + a + "'";
    std::printf("%-8u %-6.2f %-16s %7s %-8s %9.3f %s\n", r.length, r.depth, r.method.c_str(),
                r.budget ? std::to_string(r.budget).c_str() : "-", r.plan.any() ? model::plan_regime_name(r.plan) : "-",
                r.accuracy(), answers.c_str());
  }
}

}  // namespace

int run_needle(const GlobalOptions& global, const std::vector<std::string>& argv) {
  std::set<std::string> values{"model", "tokenizer",     "task",  "lengths", "depths", "samples", "prefill-budget",
                               "haystack-file", "chunk", "seed", "weight-type",    "json",   "csv",     "plot"};
  values.merge(sweep_value_options());
  values.merge(results_value_options());
  values.insert("chat-format");
  const Args args("needle", argv, values, {"random-weights", "chat", kResumeFlag});
  const NeedleArgs a = parse_needle_args(args);
  check_sweep_options(args, "needle");

  const model::Checkpoint checkpoint = open_model_checkpoint(args, a.model);
  const auto tokenizer = open_chat_tokenizer(args, a.model, checkpoint);
  vk::Device device(global.device);
  nlohmann::json config = model::needle_settings_json(a.config);
  config.update(model_identity_json(args, a.model.string()));
  config["haystack_file"] = a.haystack_file;
  config["device"] = device.info().name;
  const auto sweep = open_sweep(args, "needle", config, model::needle_cells(a.config));

  const auto start = std::chrono::steady_clock::now();
  sweep::CellHooks<model::NeedleResult> hooks;
  hooks.wanted = [&](size_t cell) { return sweep->wanted(cell); };
  hooks.done = [&](size_t cell, const model::NeedleResult& r) { sweep->record(cell, model::needle_result_json(a.config, r)); };
  model::run_needle(device, checkpoint, *tokenizer, a.config, [&](size_t done, size_t total) { progress(done, total, start); },
                    hooks);

  std::printf("needle: %s, model %s, device %s\n", model::needle_task_name(a.config.prompts.task), a.model.string().c_str(),
              device.info().name.c_str());
  print_needle_table(model::needle_results_from_json(sweep::report_json(sweep->header(), sweep->results())));
  write_sweep_reports(*sweep, {a.json, a.csv, a.plot});
  return exit_code(global, device, 0);
}

}  // namespace kv::cli
