#include <algorithm>
#include <cstdio>
#include <random>
#include <nlohmann/json.hpp>

#include "args.h"
#include "commands.h"
#include "base/error.h"
#include "output_files.h"
#include "method_args.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "model/files.h"
#include "model/prompts.h"
#include "model/speed.h"
#include "model/tokenizer.h"
#include "sweep_args.h"
#include "validation.h"

namespace kv::cli {

const char* const kSpeedHelp =
    "usage: kvscope speed --model PATH [--tokenizer PATH] [--prompt-file F | --length T]\n"
    "                     [--regime both|decode|prefill] [--steps N] [--rounds R] [--methods M1,M2]\n"
    "                     [--budgets B1,B2] [--chunk B1,B2] [--dense-layers L1,L2] [--kernel-stats] [method options]\n"
    "                     [--json OUT] [--results F.jsonl [--resume] [--shard I/N]]\n\n"
    "End-to-end speed with each method inside the model, every run in this process on\n"
    "the same prompt (default: the passkey prompt of --length T tokens, default 4096).\n"
    "  --regime both      (default) the decode table, then the prefill table\n"
    "  --regime decode    one dense prefill, then for dense and each method\n"
    "                     and budget the same greedy continuation from the prompt's\n"
    "                     end: one untimed step (it also builds the method's metadata\n"
    "                     over the prompt), then N timed steps (default 16), each\n"
    "                     token chosen on the GPU and read there by the next; ms/token\n"
    "  --regime prefill   the prompt in --chunk-token chunks (default 128) with each\n"
    "                     method in every chunk; ms to the first token, then N dense\n"
    "                     steps (untimed) to show the answer\n"
    "R rounds (default 2) interleave the runs, so that a machine's drift falls on all\n"
    "alike; each run reports the median round. Prints the speed-up over dense and the\n"
    "share of GPU time in attention and in selection; --json adds each round and GPU\n"
    "ms by part and by stage. --kernel-stats also prints what the driver's compiler\n"
    "reports for each kernel (registers, spills, ...). Defaults: --methods\n"
    "dense,quest,fier --budgets 256,1024,2048 (decode), --methods dense,quoka --budgets\n"
    "1024,2048 (prefill); --methods and --budgets given apply to both regimes. With\n"
    "both, the JSON holds {\"decode\": ..., \"prefill\": ...}.\n"
    "A paper's table in one process:\n"
    "  --budgets 11%,3%   budgets as percentages of the prompt's tokens\n"
    "  --chunk 128,512,2048\n"
    "                     a prefill table for each chunk size (the JSON's \"prefill\"\n"
    "                     is then a list, a table a chunk)\n"
    "  --gqa-agg head,max (any method option) each method runs with every value that\n"
    "                     it reads, labelled by the option (\"fier gqa-agg=max\")\n"
    "A cell is a run of a table; rounds interleave a table's runs, so its cells are\n"
    "recorded together when its last round ends, and a table is one slice of --shard:\n"
    KVSCOPE_SWEEP_FILES_HELP "\n"
    "  --random-weights   --model is a config.json (or its folder), weights drawn on the\n"
    "                     device from --seed: speed at a model's real size (docs/model.md)\n"
    "  --weight-type T    the matrices as ggml blocks of T: q8_0, q4_0, q4_1, q5_0, q5_1,\n"
    "                     q2_k .. q6_k, q4_k_m, q5_k_m (drawn so, or quantized at load), or f16\n";
namespace {

struct SpeedArgs {
  std::filesystem::path model;
  std::string prompt_file, json;
  uint32_t length = 4096;
  std::vector<uint32_t> chunks{128};  // prefill: a table each; the model's chunk is the largest
  model::Regime regime = model::Regime::both;
  uint32_t steps = 16, rounds = 2;
};

SpeedArgs parse_speed_args(const Args& args) {
  if (!args.positional().empty()) throw InputError("speed: unexpected argument '" + args.positional()[0] + "'");
  if (args.has("prompt-file") && args.has("length")) throw InputError("speed: give --prompt-file or --length, not both");
  SpeedArgs a;
  a.model = args.required("model");
  a.regime = parse_regime(args, model::Regime::both);
  a.steps = args.count("steps", 16, 1, 1u << 16);
  a.rounds = args.count("rounds", 2, 1, 100);
  if (args.has("chunk")) a.chunks = args.counts("chunk");
  for (uint32_t chunk : a.chunks)
    if (chunk < 1 || chunk > kMaxChunk)
      throw InputError("chunks of 1 to " + std::to_string(kMaxChunk) + " tokens", "chunk");
  if (a.chunks.empty()) throw InputError("no chunk size given", "chunk");
  a.length = args.count("length", 4096, 64, 1u << 20);
  a.json = args.text("json", "");
  if (!a.json.empty()) require_output_folder(a.json);
  a.prompt_file = args.text("prompt-file", "");
  return a;
}

// The tables to run, decode first, then prefill a chunk each; budgets given
// as percentages are of the prompt's tokens (the cache a decode step reads).
std::vector<model::SpeedConfig> speed_configs(const Args& args, const SpeedArgs& a, uint32_t prompt_tokens) {
  std::vector<model::SpeedConfig> configs;
  model::SpeedConfig config;
  config.steps = a.steps;
  config.rounds = a.rounds;
  if (a.regime != model::Regime::prefill) {
    config.sweep = parse_method_sweep(args, model::Regime::decode, "dense,quest,fier", {256, 1024, 2048}, prompt_tokens,
                                      &config.variants);
    configs.push_back(config);
  }
  if (a.regime != model::Regime::decode) {
    config.sweep = parse_method_sweep(args, model::Regime::prefill, "dense,quoka", {1024, 2048}, prompt_tokens,
                                      &config.variants);
    for (uint32_t chunk : a.chunks) {
      config.chunk = chunk;
      configs.push_back(config);
    }
  }
  return configs;
}

// `length` tokens: the model's BOS, then ids drawn from `seed` (a prompt for
// random weights without a tokenizer).
std::vector<int32_t> random_prompt(const model::ModelConfig& config, uint32_t length, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> tokens;
  if (config.bos_token >= 0) tokens.push_back(config.bos_token);
  while (tokens.size() < length) tokens.push_back(int32_t(rng() % config.vocab));
  return tokens;
}

void print_speed_table(const nlohmann::json& table) {
  const bool decode = table.at("regime") == "decode";
  const char* const time_key = decode ? "ms_per_token" : "time_to_first_token_ms";
  double dense_ms = 0;
  for (const nlohmann::json& r : table.at("results"))
    if (r.at("method") == "dense") dense_ms = r.at(time_key).get<double>();
  std::printf("speed: %s regime, %s, %u prompt tokens, chunk %u, %u rounds, device %s\n",
              table.at("regime").get<std::string>().c_str(), table.at("model").get<std::string>().c_str(),
              table.at("prompt_tokens").get<uint32_t>(), table.at("chunk").get<uint32_t>(), table.at("rounds").get<uint32_t>(),
              table.at("device").get<std::string>().c_str());
  if (table.contains("weights")) {
    const nlohmann::json& w = table.at("weights");
    const double gib = double(1ull << 30);
    std::printf("weights: %s; the run holds %.2f GiB (matrices %.2f, KV cache %.2f, activations %.2f)\n",
                w.at("types").get<std::string>().c_str(), w.at("run_bytes").get<double>() / gib,
                w.at("bytes").get<double>() / gib, w.at("cache_bytes").get<double>() / gib,
                w.at("activation_bytes").get<double>() / gib);
  }
  if (decode && table.contains("prefill_ms"))
    std::printf("dense prefill %.1f ms, then %u timed steps a run\n", table.at("prefill_ms").get<double>(),
                table.at("steps").get<uint32_t>());
  std::printf("%-20s %7s %12s %24s %8s %7s %7s %10s  %s\n", "method", "budget", decode ? "ms/token" : "ms to 1st",
              "rounds", "speedup", "attn", "select", decode ? "first ms" : "", "continuation");
  for (const nlohmann::json& r : table.at("results")) {
    const double median = r.at(time_key).get<double>();
    const auto gpu_ms = r.at("gpu_ms_by_part").get<std::map<std::string, double>>();
    double gpu = 0;
    for (const auto& [part, ms] : gpu_ms) gpu += ms;
    auto share = [&](const char* part) { return gpu > 0 && gpu_ms.count(part) ? 100 * gpu_ms.at(part) / gpu : 0.0; };
    std::string rounds;
    for (double ms : r.at("ms_by_round").get<std::vector<double>>()) {
      char number[32];
      std::snprintf(number, sizeof number, "%s%.1f", rounds.empty() ? "" : " ", ms);
      rounds += number;
    }
    char speedup[32] = "-", first[32] = "";
    if (dense_ms > 0) std::snprintf(speedup, sizeof speedup, "%.2fx", dense_ms / median);
    if (decode) std::snprintf(first, sizeof first, "%.1f", r.at("first_step_ms").get<double>());
    const std::string method = r.at("method").get<std::string>(), variant = r.at("variant").get<std::string>();
    const uint32_t budget = r.at("budget").get<uint32_t>();
    std::printf("%-20s %7s %12.2f %24s %8s %6.1f%% %6.1f%% %10s  '%s'\n",
                (variant.empty() ? method : method + " " + variant).c_str(), budget ? std::to_string(budget).c_str() : "-",
                median, rounds.c_str(), speedup, share("attention"), share("selection"), first,
                r.at("continuation").get<std::string>().c_str());
  }
}

// A table's settings, as its JSON holds them beside its results.
// `memory`: what the run holds on the device (model::plan_memory), beside the matrices' types and bytes.
nlohmann::json speed_table_json(const SpeedArgs& a, const model::SpeedConfig& config, uint32_t prompt_tokens,
                                const std::string& device, const model::Checkpoint& checkpoint, const model::MemoryPlan& memory) {
  const model::MethodSweep& sweep = config.sweep;
  const nlohmann::json weights = {{"types", checkpoint.matrix_types()}, {"bytes", checkpoint.matrix_bytes()},
                                  {"run_bytes", memory.total()}, {"cache_bytes", memory.cache},
                                  {"activation_bytes", memory.activations}};
  return {{"model", a.model.string()}, {"device", device}, {"regime", model::regime_name(sweep.regime)},
          {"weights", weights},
          {"prompt_file", a.prompt_file}, {"prompt_tokens", prompt_tokens}, {"steps", config.steps},
          {"rounds", config.rounds}, {"chunk", config.chunk}, {"dense_layers", sweep.dense_layers},
          {"options", model::method_options_json(sweep.methods, sweep.options)}};
}

nlohmann::json speed_result_json(const model::SpeedConfig& config, const model::SpeedRun& run, const model::SpeedResult& r,
                                 const std::string& continuation) {
  const bool decode = config.sweep.regime == model::Regime::decode;
  nlohmann::json j = {{"method", r.method}, {"variant", r.variant}, {"budget", r.budget}, {"plan", model::plan_json(r.plan)},
                      {"ms_by_round", r.ms_by_round}, {"gpu_ms_by_part", r.gpu_ms}, {"gpu_ms_by_stage", r.stage_ms},
                      {"continuation", continuation}};
  j[decode ? "ms_per_token" : "time_to_first_token_ms"] = r.median_ms();
  if (decode) {
    j["first_step_ms"] = r.first_step_ms;
    j["prefill_ms"] = run.prefill_ms;  // the dense prefill this run's steps started from
  }
  return j;
}

}  // namespace

int run_speed(const GlobalOptions& global, const std::vector<std::string>& argv) {
  std::set<std::string> values{"model", "tokenizer", "prompt-file", "length", "steps", "rounds", "chunk", "json", "seed", "weight-type"};
  values.merge(sweep_value_options());
  values.merge(results_value_options());
  const Args args("speed", argv, values, {"random-weights", "kernel-stats", kResumeFlag});
  const SpeedArgs a = parse_speed_args(args);
  check_sweep_options(args, "speed");
  const std::string prompt_text = a.prompt_file.empty() ? "" : model::read_text_file(a.prompt_file);

  const model::Checkpoint checkpoint = open_model_checkpoint(args, a.model);
  const auto tokenizer = open_model_tokenizer(args, a.model, checkpoint);
  std::vector<int32_t> prompt;
  if (!a.prompt_file.empty()) prompt = model::prompt_tokens(*tokenizer, checkpoint.config(), prompt_text);
  else if (model::is_token_ids(*tokenizer)) prompt = random_prompt(checkpoint.config(), a.length, args.count("seed", 0));
  else prompt = model::prompt_tokens(*tokenizer, checkpoint.config(), model::passkey_prompt(*tokenizer, a.length, 0.5, 61538).text);

  std::vector<model::SpeedConfig> configs = speed_configs(args, a, uint32_t(prompt.size()));
  const uint32_t positions = uint32_t(prompt.size()) + a.steps + 1;  // every table's steps alike
  if (checkpoint.random() && positions > checkpoint.configured_positions())
    std::fprintf(stderr, "kvscope: note: %u positions are past the config's max_position_embeddings of %u: random weights time them all the same\n",
                 positions, checkpoint.configured_positions());
  vk::DeviceOptions device_options = global.device;
  device_options.kernel_statistics = args.flag("kernel-stats");
  vk::Device device(device_options);
  const uint32_t model_chunk = *std::max_element(a.chunks.begin(), a.chunks.end());
  nlohmann::json tables = nlohmann::json::array();
  sweep::SweepCells cells;
  std::vector<size_t> first_cell;  // per table
  for (model::SpeedConfig& config : configs) {
    if (!config.chunk) config.chunk = model_chunk;
    const uint32_t table = uint32_t(tables.size());
    tables.push_back(speed_table_json(a, config, uint32_t(prompt.size()), device.info().name, checkpoint,
                                      model::plan_memory(checkpoint, positions, model_chunk)));
    first_cell.push_back(cells.keys.size());
    const std::vector<model::SpeedResult> runs = model::speed_runs(config);
    for (const model::SpeedResult& r : runs)
      cells.add({{"table", table}, {"method", r.method}, {"variant", r.variant}, {"budget", r.budget}}, table);
    cells.group_costs.push_back(double(runs.size()) * config.rounds);
  }
  nlohmann::json config_json = model_identity_json(args, a.model.string());
  config_json["tables"] = tables;
  config_json["prompt_seed"] = args.count("seed", 0);
  const auto sweep = open_sweep(args, "speed", config_json, cells);

  bool any_wanted = false;
  for (size_t cell = 0; cell < cells.keys.size(); ++cell) any_wanted |= sweep->wanted(cell);
  std::unique_ptr<model::Model> runner;
  if (any_wanted) runner = std::make_unique<model::Model>(device, checkpoint, positions, model_chunk);
  for (size_t t = 0; t < configs.size() && runner; ++t) {
    auto wanted = [&](size_t run) { return sweep->wanted(first_cell[t] + run); };
    const model::SpeedRun run = model::run_speed(*runner, prompt, configs[t], runs_progress("speed"), wanted);
    // The runs it timed, in order, are the table's wanted cells.
    size_t next = 0;
    for (size_t cell = first_cell[t]; cell < cells.keys.size() && cells.groups[cell] == t; ++cell) {
      if (!sweep->wanted(cell)) continue;
      const model::SpeedResult& r = run.results.at(next++);
      const std::string continuation = model::ids_text(*tokenizer, checkpoint.config(), r.continuation, prompt.back());
      sweep->record(cell, speed_result_json(configs[t], run, r, continuation));
    }
  }

  const std::vector<nlohmann::json> printed = sweep::speed_tables(sweep->header(), sweep->results());
  for (size_t t = 0; t < printed.size(); ++t) {
    if (t) std::printf("\n");
    print_speed_table(printed[t]);
  }
  nlohmann::json report = sweep::report_json(sweep->header(), sweep->results());
  if (device.kernel_statistics_enabled()) {
    report["kernels"] = device.kernel_statistics();
    for (const auto& [kernel, statistics] : device.kernel_statistics())
      std::printf("%s: %s\n", kernel.c_str(), statistics.c_str());
  }
  if (sweep->header().shard.count > 1 && !a.json.empty())
    std::fprintf(stderr, "kvscope: note: the report holds shard %s's cells alone; `kvscope merge` writes the whole sweep's\n",
                 sweep::shard_text(sweep->header().shard).c_str());
  if (!a.json.empty()) write_text_atomically(a.json, sweep::report_text(report));
  return exit_code(global, device, 0);
}

}  // namespace kv::cli
