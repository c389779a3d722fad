#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "args.h"
#include "commands.h"
#include "error.h"
#include "files.h"
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
    "                     [--regime decode|prefill] [--steps N] [--rounds R] [--methods M1,M2]\n"
    "                     [--budgets B1,B2] [--chunk B] [--dense-layers L1,L2] [method options]\n"
    "                     [--json OUT]\n\n"
    "End-to-end speed with each method inside the model, every run in this process on\n"
    "the same prompt (default: the passkey prompt of --length T tokens, default 4096).\n"
    "  --regime decode    (default) one dense prefill, then for dense and each method\n"
    "                     and budget the same greedy continuation from the prompt's\n"
    "                     end: one untimed step (it also builds the method's metadata\n"
    "                     over the prompt), then N timed steps (default 16); ms/token\n"
    "  --regime prefill   the prompt in --chunk-token chunks (default 128) with each\n"
    "                     method in every chunk; ms to the first token, then N dense\n"
    "                     steps (untimed) to show the answer\n"
    "R rounds (default 2) interleave the runs, so that a machine's drift falls on all\n"
    "alike; each run reports the median round. Prints the speed-up over dense and the\n"
    "share of GPU time in attention and in selection; --json adds each round and GPU\n"
    "ms by part. Defaults: --methods dense,quest,fier --budgets 256,1024,2048 (decode),\n"
    "--methods dense,quoka --budgets 1024,2048 (prefill).\n";

int run_speed(const GlobalOptions& global, const std::vector<std::string>& argv) {
  std::set<std::string> values{"model", "tokenizer", "prompt-file", "length", "regime", "steps", "rounds", "chunk", "json"};
  values.merge(sweep_value_options());
  Args args("speed", argv, values, {});
  if (!args.positional().empty()) throw InputError("speed: unexpected argument '" + args.positional()[0] + "'");
  if (args.has("prompt-file") && args.has("length")) throw InputError("speed: give --prompt-file or --length, not both");
  const std::filesystem::path model_path = args.required("model");
  const std::string regime = args.text("regime", "decode");
  if (regime != "decode" && regime != "prefill") throw InputError("speed: --regime is decode or prefill, not '" + regime + "'");
  const bool decode = regime == "decode";
  const MethodSweepArgs sweep = decode ? parse_method_sweep(args, "speed", "dense,quest,fier", {256, 1024, 2048})
                                       : parse_method_sweep(args, "speed", "dense,quoka", {1024, 2048});
  model::SpeedConfig config{decode ? Mode::decode : Mode::prefill, sweep.methods, sweep.budgets, sweep.options,
                            sweep.dense_layers};
  config.steps = args.count("steps", 16, 1, 1u << 16);
  config.rounds = args.count("rounds", 2, 1, 100);
  config.chunk = args.count("chunk", 128, 1, 4096);
  const uint32_t length = args.count("length", 4096, 64, 1u << 20);
  const std::string json_path = args.text("json", "");
  if (!json_path.empty()) require_output_folder(json_path);
  const std::string prompt_file = args.text("prompt-file", "");
  const std::string prompt_text = prompt_file.empty() ? "" : model::read_text_file(prompt_file);

  const model::Checkpoint checkpoint = model::Checkpoint::open(model_path);
  const auto tokenizer = open_model_tokenizer(args, model_path, checkpoint);
  const std::vector<int32_t> prompt = model::prompt_tokens(
      *tokenizer, checkpoint.config(), prompt_file.empty() ? model::passkey_prompt(*tokenizer, length, 0.5, 61538).text : prompt_text);

  vk::Device device(global.device);
  const auto start = std::chrono::steady_clock::now();
  const model::SpeedRun run = model::run_speed(device, checkpoint, prompt, config, [&](size_t done, size_t total) {
    if (!isatty(STDERR_FILENO)) return;
    std::fprintf(stderr, "\rspeed: %zu/%zu runs, %.0f s", done, total,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (done == total) std::fputc('\n', stderr);
  });

  double dense_ms = 0;
  for (const model::SpeedResult& r : run.results)
    if (r.method == "dense") dense_ms = r.median_ms();
  std::printf("speed: %s regime, %s, %u prompt tokens, chunk %u, %u rounds, device %s\n", regime.c_str(),
              model_path.string().c_str(), run.prompt_tokens, config.chunk, config.rounds, device.info().name.c_str());
  if (decode) std::printf("dense prefill %.1f ms, then %u timed steps a run\n", run.prefill_ms, config.steps);
  std::printf("%-12s %7s %12s %24s %8s %7s %7s %10s  %s\n", "method", "budget", decode ? "ms/token" : "ms to 1st",
              "rounds", "speedup", "attn", "select", decode ? "first ms" : "", "continuation");
  nlohmann::json results = nlohmann::json::array();
  for (const model::SpeedResult& r : run.results) {
    const double median = r.median_ms();
    double gpu = 0;
    for (const auto& [part, ms] : r.gpu_ms) gpu += ms;
    auto share = [&](const char* part) { return gpu > 0 ? 100 * r.gpu_ms.at(part) / gpu : 0.0; };
    std::string rounds, text;
    for (double ms : r.ms_by_round) {
      char number[32];
      std::snprintf(number, sizeof number, "%s%.1f", rounds.empty() ? "" : " ", ms);
      rounds += number;
    }
    for (size_t i = 0; i < r.continuation.size(); ++i)
      text += tokenizer->decode(i ? r.continuation[i - 1] : prompt.back(), r.continuation[i]);
    char speedup[32] = "-", first[32] = "";
    if (dense_ms > 0) std::snprintf(speedup, sizeof speedup, "%.2fx", dense_ms / median);
    if (decode) std::snprintf(first, sizeof first, "%.1f", r.first_step_ms);
    std::printf("%-12s %7s %12.2f %24s %8s %6.1f%% %6.1f%% %10s  '%s'\n", r.method.c_str(),
                r.budget ? std::to_string(r.budget).c_str() : "-", median, rounds.c_str(), speedup, share("attention"),
                share("selection"), first, text.c_str());
    nlohmann::json j = {{"method", r.method}, {"budget", r.budget}, {"ms_by_round", r.ms_by_round},
                        {"gpu_ms_by_part", r.gpu_ms}, {"continuation", text}};
    j[decode ? "ms_per_token" : "time_to_first_token_ms"] = median;
    if (decode) j["first_step_ms"] = r.first_step_ms;
    results.push_back(j);
  }
  if (!json_path.empty()) {
    nlohmann::json j = {{"model", model_path.string()}, {"device", device.info().name}, {"regime", regime},
                        {"prompt_file", prompt_file}, {"prompt_tokens", run.prompt_tokens}, {"steps", config.steps},
                        {"rounds", config.rounds}, {"chunk", config.chunk}, {"dense_layers", config.dense_layers},
                        {"options", method_options_json(config.methods, config.options)}, {"results", results}};
    if (decode) j["prefill_ms"] = run.prefill_ms;
    write_text_atomically(json_path, j.dump(1) + "\n");
  }
  return exit_code(global, device, 0);
}

}  // namespace kv::cli
