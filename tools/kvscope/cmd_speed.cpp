#include <algorithm>
#include <cstdio>
#include <random>
#include <nlohmann/json.hpp>

#include "args.h"
#include "commands.h"
#include "error.h"
#include "output_files.h"
#include "method_args.h"
#include "model/checkpoint.h"
#include "model/files.h"
#include "model/prompts.h"
#include "model/speed.h"
#include "model/tokenizer.h"
#include "validation.h"

namespace kv::cli {

const char* const kSpeedHelp =
    "usage: kvscope speed --model PATH [--tokenizer PATH] [--prompt-file F | --length T]\n"
    "                     [--regime both|decode|prefill] [--steps N] [--rounds R] [--methods M1,M2]\n"
    "                     [--budgets B1,B2] [--chunk B1,B2] [--dense-layers L1,L2] [--kernel-stats] [method options]\n"
    "                     [--json OUT]\n\n"
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
    "                     it reads, labelled by the option (\"fier gqa-agg=max\")\n\n"
    "  --random-weights   --model is a config.json (or its folder), weights drawn on the\n"
    "                     device from --seed: speed at a model's real size (docs/model.md)\n";
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

// The continuation as text, each token decoded after the one before it.
std::string continuation_text(const model::Tokenizer& tokenizer, int32_t before, const std::vector<int32_t>& tokens) {
  std::string text;
  for (size_t i = 0; i < tokens.size(); ++i) text += tokenizer.decode(i ? tokens[i - 1] : before, tokens[i]);
  return text;
}

void print_speed_table(const SpeedArgs& a, const model::SpeedConfig& config, const model::SpeedRun& run,
                       const std::string& device, const std::vector<std::string>& texts) {
  const bool decode = config.sweep.regime == model::Regime::decode;
  double dense_ms = 0;
  for (const model::SpeedResult& r : run.results)
    if (r.method == "dense") dense_ms = r.median_ms();
  std::printf("speed: %s regime, %s, %u prompt tokens, chunk %u, %u rounds, device %s\n",
              model::regime_name(config.sweep.regime), a.model.string().c_str(), run.prompt_tokens, config.chunk,
              config.rounds, device.c_str());
  if (decode) std::printf("dense prefill %.1f ms, then %u timed steps a run\n", run.prefill_ms, config.steps);
  std::printf("%-20s %7s %12s %24s %8s %7s %7s %10s  %s\n", "method", "budget", decode ? "ms/token" : "ms to 1st",
              "rounds", "speedup", "attn", "select", decode ? "first ms" : "", "continuation");
  for (size_t i = 0; i < run.results.size(); ++i) {
    const model::SpeedResult& r = run.results[i];
    const double median = r.median_ms();
    double gpu = 0;
    for (const auto& [part, ms] : r.gpu_ms) gpu += ms;
    auto share = [&](const char* part) { return gpu > 0 ? 100 * r.gpu_ms.at(part) / gpu : 0.0; };
    std::string rounds;
    for (double ms : r.ms_by_round) {
      char number[32];
      std::snprintf(number, sizeof number, "%s%.1f", rounds.empty() ? "" : " ", ms);
      rounds += number;
    }
    char speedup[32] = "-", first[32] = "";
    if (dense_ms > 0) std::snprintf(speedup, sizeof speedup, "%.2fx", dense_ms / median);
    if (decode) std::snprintf(first, sizeof first, "%.1f", r.first_step_ms);
    const std::string label = r.variant.empty() ? r.method : r.method + " " + r.variant;
    std::printf("%-20s %7s %12.2f %24s %8s %6.1f%% %6.1f%% %10s  '%s'\n", label.c_str(),
                r.budget ? std::to_string(r.budget).c_str() : "-", median, rounds.c_str(), speedup, share("attention"),
                share("selection"), first, texts[i].c_str());
  }
}

nlohmann::json speed_json(const SpeedArgs& a, const model::SpeedConfig& config, const model::SpeedRun& run,
                          const std::string& device, const std::vector<std::string>& texts) {
  const bool decode = config.sweep.regime == model::Regime::decode;
  nlohmann::json results = nlohmann::json::array();
  for (size_t i = 0; i < run.results.size(); ++i) {
    const model::SpeedResult& r = run.results[i];
    nlohmann::json j = {{"method", r.method}, {"variant", r.variant}, {"budget", r.budget}, {"plan", model::plan_json(r.plan)},
                        {"ms_by_round", r.ms_by_round}, {"gpu_ms_by_part", r.gpu_ms}, {"gpu_ms_by_stage", r.stage_ms},
                        {"continuation", texts[i]}};
    j[decode ? "ms_per_token" : "time_to_first_token_ms"] = r.median_ms();
    if (decode) j["first_step_ms"] = r.first_step_ms;
    results.push_back(j);
  }
  const model::MethodSweep& sweep = config.sweep;
  nlohmann::json j = {{"model", a.model.string()}, {"device", device}, {"regime", model::regime_name(sweep.regime)},
                      {"prompt_file", a.prompt_file}, {"prompt_tokens", run.prompt_tokens}, {"steps", config.steps},
                      {"rounds", config.rounds}, {"chunk", config.chunk}, {"dense_layers", sweep.dense_layers},
                      {"options", model::method_options_json(sweep.methods, sweep.options)}, {"results", results}};
  if (decode) j["prefill_ms"] = run.prefill_ms;
  return j;
}

}  // namespace

int run_speed(const GlobalOptions& global, const std::vector<std::string>& argv) {
  std::set<std::string> values{"model", "tokenizer", "prompt-file", "length", "steps", "rounds", "chunk", "json", "seed"};
  values.merge(sweep_value_options());
  const Args args("speed", argv, values, {"random-weights", "kernel-stats"});
  const SpeedArgs a = parse_speed_args(args);
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
  model::Model runner(device, checkpoint, positions, model_chunk);
  nlohmann::json report, prefill_tables = nlohmann::json::array();
  for (model::SpeedConfig& config : configs) {
    if (!config.chunk) config.chunk = model_chunk;
    if (&config != &configs.front()) std::printf("\n");
    const model::SpeedRun run = model::run_speed(runner, prompt, config, runs_progress("speed"));
    std::vector<std::string> texts;
    for (const model::SpeedResult& r : run.results) texts.push_back(continuation_text(*tokenizer, prompt.back(), r.continuation));
    print_speed_table(a, config, run, device.info().name, texts);
    const nlohmann::json j = speed_json(a, config, run, device.info().name, texts);
    if (config.sweep.regime == model::Regime::prefill) prefill_tables.push_back(j);
    else report["decode"] = j;
  }
  // One table: its object. Both regimes: {"decode", "prefill"}; several
  // chunks: "prefill" a list, a table a chunk.
  if (!prefill_tables.empty()) report["prefill"] = prefill_tables.size() == 1 ? prefill_tables[0] : prefill_tables;
  if (configs.size() == 1) report = report.begin().value();
  if (device.kernel_statistics_enabled()) {
    report["kernels"] = device.kernel_statistics();
    for (const auto& [kernel, statistics] : device.kernel_statistics())
      std::printf("%s: %s\n", kernel.c_str(), statistics.c_str());
  }
  if (!a.json.empty()) write_text_atomically(a.json, json_text(report, 1));
  return exit_code(global, device, 0);
}

}  // namespace kv::cli
