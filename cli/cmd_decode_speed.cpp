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
#include "model/decode_speed.h"
#include "model/files.h"
#include "model/prompts.h"
#include "model/tokenizer.h"
#include "validation.h"

namespace kv::cli {

const char* const kDecodeSpeedHelp =
    "usage: kvscope decode-speed --model PATH [--tokenizer PATH] [--prompt-file F | --length T]\n"
    "                            [--steps N] [--rounds R] [--methods M1,M2] [--budgets B1,B2]\n"
    "                            [--chunk B] [--dense-layers L1,L2] [method options] [--json OUT]\n\n"
    "Decode ms/token with each method inside the model, all after one dense prefill\n"
    "of the same prompt (default: the passkey prompt of --length T tokens, default\n"
    "4096): for dense and each method and budget, the same greedy continuation from\n"
    "the prompt's end, one untimed step (it also builds the method's metadata over\n"
    "the prompt) then N timed steps (default 16). R rounds (default 2) interleave the\n"
    "runs, so that a machine's drift falls on all alike. Prints ms/token (mean and\n"
    "each round), the speed-up over dense, and the share of GPU time in attention\n"
    "and in selection; --json writes the same with GPU ms per token by part.\n"
    "Defaults: --methods dense,quest,fier --budgets 256,1024,2048.\n";

int run_decode_speed(const GlobalOptions& global, const std::vector<std::string>& argv) {
  std::set<std::string> values{"model", "tokenizer", "prompt-file", "length", "steps", "rounds", "chunk", "json"};
  values.merge(sweep_value_options());
  Args args("decode-speed", argv, values, {});
  if (!args.positional().empty()) throw InputError("decode-speed: unexpected argument '" + args.positional()[0] + "'");
  if (args.has("prompt-file") && args.has("length")) throw InputError("decode-speed: give --prompt-file or --length, not both");
  const std::filesystem::path model_path = args.required("model");
  const MethodSweepArgs sweep = parse_method_sweep(args, "decode-speed", "dense,quest,fier", {256, 1024, 2048});
  model::DecodeSpeedConfig config{sweep.methods, sweep.budgets, sweep.options, sweep.dense_layers};
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
  const model::DecodeSpeedRun run = model::run_decode_speed(device, checkpoint, prompt, config, [&](size_t done, size_t total) {
    if (!isatty(STDERR_FILENO)) return;
    std::fprintf(stderr, "\rdecode-speed: %zu/%zu runs (the prefill first), %.0f s", done, total,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (done == total) std::fputc('\n', stderr);
  });

  double dense_ms = 0;
  for (const model::DecodeSpeedResult& r : run.results)
    if (r.method == "dense") dense_ms = r.mean_ms_per_token();
  std::printf("decode-speed: %s, %u prompt tokens (dense prefill %.1f ms), %u timed steps x %u rounds, device %s\n",
              model_path.string().c_str(), run.prompt_tokens, run.prefill_ms, config.steps, config.rounds,
              device.info().name.c_str());
  std::printf("%-12s %7s %10s %18s %8s %7s %7s %10s  %s\n", "method", "budget", "ms/token", "rounds", "speedup", "attn", "select",
              "first ms", "continuation");
  nlohmann::json results = nlohmann::json::array();
  for (const model::DecodeSpeedResult& r : run.results) {
    const double mean = r.mean_ms_per_token();
    double gpu = 0;
    for (const auto& [part, ms] : r.gpu_ms_per_token) gpu += ms;
    auto share = [&](const char* part) { return gpu > 0 ? 100 * r.gpu_ms_per_token.at(part) / gpu : 0.0; };
    std::string rounds, text;
    for (double ms : r.ms_per_token) {
      char number[32];
      std::snprintf(number, sizeof number, "%s%.1f", rounds.empty() ? "" : " ", ms);
      rounds += number;
    }
    for (size_t i = 0; i < r.continuation.size(); ++i)
      text += tokenizer->decode(i ? r.continuation[i - 1] : prompt.back(), r.continuation[i]);
    std::printf("%-12s %7s %10.2f %18s %8s %6.1f%% %6.1f%% %10.1f  '%s'\n", r.method.c_str(),
                r.budget ? std::to_string(r.budget).c_str() : "-", mean, rounds.c_str(),
                dense_ms > 0 ? (std::to_string(dense_ms / mean).substr(0, 4) + "x").c_str() : "-", share("attention"),
                share("selection"), r.first_step_ms, text.c_str());
    results.push_back({{"method", r.method}, {"budget", r.budget}, {"ms_per_token", mean},
                       {"ms_per_token_by_round", r.ms_per_token}, {"first_step_ms", r.first_step_ms},
                       {"gpu_ms_per_token_by_part", r.gpu_ms_per_token}, {"continuation", text}});
  }
  if (!json_path.empty())
    write_text_atomically(json_path, nlohmann::json{{"model", model_path.string()}, {"device", device.info().name},
                                                    {"prompt_file", prompt_file}, {"prompt_tokens", run.prompt_tokens},
                                                    {"prefill_ms", run.prefill_ms}, {"steps", config.steps},
                                                    {"rounds", config.rounds}, {"chunk", config.chunk},
                                                    {"dense_layers", config.dense_layers},
                                                    {"options", method_options_json(config.methods, config.options)},
                                                    {"results", results}}
                                         .dump(1) + "\n");
  return exit_code(global, device, 0);
}

}  // namespace kv::cli
