#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <algorithm>

#include "args.h"
#include "io/bundled.h"
#include "commands.h"
#include "base/error.h"
#include "method_args.h"
#include "model/files.h"
#include "output_files.h"
#include "ruler/ruler.h"
#include "sweep_args.h"
#include "validation.h"

namespace kv::cli {

const char* const kRulerHelp =
    "usage: kvscope ruler --model PATH [--tokenizer PATH] [--tasks T1,T2|all] [--lengths L1,L2] [--samples N]\n"
    "                     [--seed S] [--methods M1,M2] [--budgets B1,B2] [--regime decode|prefill|both]\n"
    "                     [--prefill-budget B] [--dense-layers L1,L2] [--chunk B] [--words FILE]\n"
    "                     [--haystack-file F] [--tokens-to-generate N] [--chat | --chat-format NAME]\n"
    "                     [method options] [--json OUT] [--csv OUT] [--results F.jsonl [--resume] [--shard I/N]]\n"
    "       kvscope ruler --model PATH --data DIR [--tasks T1,T2|all] [--samples N] [--tokens-to-generate N]\n"
    "                     [--methods ..] [--budgets ..] [--regime ..] [method options] [outputs as above]\n\n"
    "RULER's 11 synthetic tasks with each method inside the model: niah_single_1..3,\n"
    "niah_multikey_1..3, niah_multivalue, niah_multiquery (needles of words, numbers or\n"
    "UUIDs in a noise, essay or needle haystack), vt (variable tracking), cwe and fwe\n"
    "(common- and frequent-words extraction), built from RULER's task definitions\n"
    "(docs/methods.md, \"RULER\"). Each prompt is fitted to the length in the model's\n"
    "tokens (the prompt plus the task's generated tokens: 128 for niah, 30 vt, 120 cwe,\n"
    "50 fwe), the answer generated greedily after the task's answer prefix and scored\n"
    "by RULER's string match (every reference, case-insensitive), 0 to 100. Prints a\n"
    "table per length: a row per method and budget, a column per task and their mean.\n"
    "--data DIR: RULER's own prompts, the files its scripts/data/prepare.py writes\n"
    "(DIR/<task>/validation.jsonl, a folder a task: niah_*, vt, cwe, fwe, qa_1, qa_2).\n"
    "Each record's input + answer_prefix goes to the model as written, after its BOS\n"
    "(the files carry the chat template RULER made them with: --chat is refused),\n"
    "the task's tokens generated (niah 128, vt 30, cwe 120, fwe 50, qa 32;\n"
    "--tokens-to-generate N: N) and scored by RULER's metric: string_match_all, and\n"
    "string_match_part (any reference) for qa_*. One table: a column per task.\n"
    "--tasks chooses folders (default every one holding validation.jsonl), --samples N\n"
    "a task's first N records (default all); --lengths, --seed, --words and\n"
    "--haystack-file are for generated prompts only.\n"
    "  --tasks            default all 11\n"
    "  --lengths          default 4096\n"
    "  --samples          prompts per task and length (default 4), each its own draws from --seed\n"
    "  --methods, --budgets, --regime   as in `kvscope needle` (default dense,quest,fier,streaming\n"
    "                     x 256,1024, decode)\n"
    "  --words FILE       the word list (default Debian's wamerican, /usr/share/dict/american-english;\n"
    "                     its lowercase words of 3 to 10 letters)\n"
    "  --haystack-file F  the essay haystack's prose (default assets/text/licenses.txt)\n"
    "  --tokens-to-generate N  at most N answer tokens (default each task's); generation\n"
    "                     also stops at an end of sequence and once every reference is said\n"
    "--json: the settings and a result per (task, length, method, budget) with its plan,\n"
    "score, predictions and references; --csv the same without the texts. A cell is a\n"
    "(task, length, method, budget); a (task, length)'s cells share its prompts and form\n"
    "one slice of --shard:\n" KVSCOPE_SWEEP_FILES_HELP
    "  --random-weights   --model is a config.json (or its folder), weights drawn on the\n"
    "                     device from --seed: speed at a model's real size (docs/model.md)\n"
    "  --weight-type T    the matrices as ggml blocks of T: q8_0, q4_0, q4_1, q5_0, q5_1,\n"
    "                     q2_k .. q6_k, q4_k_m, q5_k_m (drawn so, or quantized at load), or f16\n"
    "  --chat             wrap each prompt as the model's chat template wraps one user turn,\n"
    "                     the answer prefix after the assistant's header (as RULER's model\n"
    "                     templates); --chat-format NAME: in that format\n";

namespace {

// With --data (`data` not empty) one table, whatever the files' lengths.
void print_ruler_tables(const nlohmann::json& results, const std::vector<std::string>& tasks, const std::string& data) {
  // length -> row (method, budget, regime) -> task -> score, rows in the sweep's order.
  std::map<uint32_t, std::vector<std::string>> rows;
  std::map<uint32_t, std::map<std::string, std::map<std::string, double>>> scores;
  for (const nlohmann::json& r : results) {
    const uint32_t length = data.empty() ? r.at("length").get<uint32_t>() : 0, budget = r.at("budget").get<uint32_t>();
    const std::string method = r.at("method").get<std::string>();
    const std::string row = method == "dense" ? "dense" : method + " " + std::to_string(budget) + " " + r.at("regime").get<std::string>();
    auto& order = rows[length];
    if (std::find(order.begin(), order.end(), row) == order.end()) order.push_back(row);
    scores[length][row][r.at("task").get<std::string>()] = r.at("score").get<double>();
  }
  for (const auto& [length, order] : rows) {
    if (data.empty()) std::printf("\nRULER at %u tokens (score 0-100)\n%-24s", length, "method budget regime");
    else std::printf("\nRULER's files in %s (score 0-100)\n%-24s", data.c_str(), "method budget regime");
    for (const std::string& t : tasks) std::printf(" %15s", t.c_str());
    std::printf(" %8s\n", "mean");
    for (const std::string& row : order) {
      std::printf("%-24s", row.c_str());
      double sum = 0;
      size_t count = 0;
      for (const std::string& t : tasks) {
        const auto& by_task = scores.at(length).at(row);
        if (!by_task.count(t)) {
          std::printf(" %15s", "-");
          continue;
        }
        std::printf(" %15.2f", by_task.at(t));
        sum += by_task.at(t);
        ++count;
      }
      if (count) std::printf(" %8.2f\n", sum / double(count));
      else std::printf(" %8s\n", "-");
    }
  }
}

}  // namespace

int run_ruler(const GlobalOptions& global, const std::vector<std::string>& argv) {
  std::set<std::string> values{"model", "tokenizer", "tasks", "lengths", "samples", "seed", "weight-type", "prefill-budget", "chunk",
                               "words", "haystack-file", "tokens-to-generate", "json", "csv", "chat-format", "data"};
  values.merge(sweep_value_options());
  values.merge(results_value_options());
  const Args args("ruler", argv, values, {"random-weights", "chat", kResumeFlag});
  if (!args.positional().empty()) throw InputError("ruler: unexpected argument '" + args.positional()[0] + "'");
  const std::filesystem::path model_path = args.required("model");
  ruler::RulerConfig config;
  const std::string data = args.text("data", "");
  if (!data.empty()) {
    // RULER's files were made with a model template (prepare.py
    // --model_template_type) and are sent as written.
    if (args.flag("chat") || args.has("chat-format"))
      throw InputError("ruler: --chat does not go with --data: RULER's files already carry the chat template they were made with");
    for (const char* generated_only : {"lengths", "seed", "words", "haystack-file"})
      if (args.has(generated_only))
        throw InputError(std::string("ruler: --") + generated_only + " is for generated prompts; --data's files are RULER's own");
    ruler::read_ruler_files(config, data,
                            args.text("tasks", "all") == "all" ? std::vector<std::string>{} : args.texts("tasks", ""),
                            args.count("samples", 0, 1, 1u << 30));
  } else {
    if (args.text("tasks", "all") == "all") {
      for (const ruler::TaskSpec& t : ruler::task_table()) config.tasks.push_back(t.name);
    } else {
      config.tasks = args.texts("tasks", "");
      for (const std::string& t : config.tasks) ruler::find_task(t);
    }
    config.lengths = args.has("lengths") ? args.counts("lengths") : std::vector<uint32_t>{4096};
    for (uint32_t l : config.lengths)
      if (l < 64 || l > (1u << 20)) throw InputError("ruler: --lengths must be between 64 and 1048576 tokens");
    config.samples = args.count("samples", 4, 1, 100000);
    config.seed = args.count("seed", 0);
  }
  config.chunk = args.count("chunk", 128, 1, kMaxChunk);
  config.max_generate = args.count("tokens-to-generate", 0, 1, 4096);
  config.sweep = parse_method_sweep(args, parse_regime(args, model::Regime::decode), "dense,quest,fier,streaming",
                                    {256, 1024});
  const std::string words_path = args.text("words", ruler::kDefaultWordList);
  const std::string essay_path = args.text("haystack-file", bundled_asset("text/licenses.txt").string());
  if (data.empty()) {
    config.texts.words = ruler::read_word_list(words_path);
    config.texts.essay = model::read_text_file(essay_path);
  }
  const std::string json_path = args.text("json", ""), csv_path = args.text("csv", "");
  check_sweep_options(args, "ruler");
  for (const std::string& path : {json_path, csv_path})
    if (!path.empty()) require_output_folder(path);

  const model::Checkpoint checkpoint = open_model_checkpoint(args, model_path);
  const auto tokenizer = open_chat_tokenizer(args, model_path, checkpoint);
  vk::Device device(global.device);
  nlohmann::json settings = ruler::ruler_settings_json(config);
  settings.update(model_identity_json(args, model_path.string()));
  if (data.empty()) {
    settings["word_list"] = std::filesystem::absolute(words_path).lexically_normal().string();
    settings["haystack_file"] = std::filesystem::absolute(essay_path).lexically_normal().string();
  }
  settings["device"] = device.info().name;
  const auto sweep = open_sweep(args, "ruler", settings, ruler::ruler_cells(config));

  sweep::CellHooks<ruler::RulerResult> hooks;
  hooks.wanted = [&](size_t cell) { return sweep->wanted(cell); };
  hooks.done = [&](size_t cell, const ruler::RulerResult& r) { sweep->record(cell, ruler::ruler_result_json(r)); };
  ruler::run_ruler(device, checkpoint, *tokenizer, config, runs_progress("ruler"), hooks);

  if (data.empty())
    std::printf("ruler: model %s, %u samples a task and length, device %s\n", model_path.string().c_str(), config.samples,
                device.info().name.c_str());
  else
    std::printf("ruler: model %s, RULER's files in %s, device %s\n", model_path.string().c_str(), config.data_dir.c_str(),
                device.info().name.c_str());
  print_ruler_tables(sweep::report_json(sweep->header(), sweep->results()).at("results"), config.tasks, config.data_dir);
  write_sweep_reports(*sweep, {json_path, csv_path, ""});
  return exit_code(global, device, 0);
}

}  // namespace kv::cli
