#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "args.h"
#include "commands.h"
#include "error.h"
#include "output_files.h"
#include "method_args.h"
#include "model/checkpoint.h"
#include "model/files.h"
#include "model/model.h"
#include "model/prompts.h"
#include "model/tokenizer.h"
#include "random.h"
#include "safetensors.h"
#include "validation.h"

namespace kv::cli {

const char* const kGenerateHelp =
    "usage: kvscope generate --model PATH [--tokenizer PATH] [--prompt TEXT | --prompt-file F]\n"
    "                        [--steps N] [--temperature T] [--top-p P] [--seed S] [--chunk B]\n"
    "                        [--method M --budget B] [--prefill-method M --prefill-budget B]\n"
    "                        [--dense-layers L1,L2] [method options] [--json OUT]\n\n"
    "Runs a model on the GPU and prints the text it generates, as it is made, on\n"
    "stdout (everything else goes to stderr). The prompt starts with the model's\n"
    "BOS where it has one; generation stops after --steps new tokens (default 256)\n"
    "or at the model's end-of-sequence token.\n"
    "  --model PATH       a Hugging Face directory (config.json, model.safetensors or\n"
    "                     its shards, tokenizer.json): Llama, Mistral, Qwen2; or a\n"
    "                     llama2.c checkpoint (.bin)\n"
    "  --tokenizer PATH   tokenizer.json or a llama2.c tok*.bin (default: the model\n"
    "                     directory's tokenizer.json, or the one tok*.bin beside a .bin)\n"
    "  --temperature T    0 (default): the most likely token each step; above 0,\n"
    "                     sampling from softmax(logits / T) within --top-p P (default\n"
    "                     0.9), seeded by --seed S (default 0)\n"
    "  --chunk B          prompt tokens a prefill step takes (default 128)\n"
    "  --json OUT         time to first token, prefill tokens/s, decode ms/token and\n"
    "                     GPU time per stage and per part (the model's layers,\n"
    "                     attention, selection), summed over the run; the selection\n"
    "                     plan\n"
    "  --logits OUT       also write the prompt's token ids and the logits of every\n"
    "                     prompt position (safetensors: tokens I32 [n], logits F32\n"
    "                     [n, vocab]), to compare with another implementation\n\n"
    "  --random-weights   --model is a config.json (or its folder), weights drawn on the\n"
    "                     device from --seed: speed at a model's real size (docs/model.md)\n";
namespace {

// A token from softmax(logits / temperature), within the smallest set of the
// most likely tokens whose probabilities reach top_p.
int32_t sample(const std::vector<float>& logits, double temperature, double top_p, Random& random) {
  const float largest = *std::max_element(logits.begin(), logits.end());
  std::vector<std::pair<double, int32_t>> p;
  double total = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const double e = std::exp((double(logits[i]) - largest) / temperature);
    p.push_back({e, int32_t(i)});
    total += e;
  }
  std::sort(p.begin(), p.end(), [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  double kept = 0;
  size_t n = 0;
  while (n < p.size() && (n == 0 || kept < top_p * total)) kept += p[n++].first;
  double r = random.uniform() * kept;
  for (size_t i = 0; i < n; ++i)
    if ((r -= p[i].first) < 0) return p[i].second;
  return p[n - 1].second;
}

void progress(uint32_t done, uint32_t total) {
  const int width = 40, filled = int(double(done) / total * width);
  std::fprintf(stderr, "\rprefill [%s%s] %u/%u tokens", std::string(size_t(filled), '#').c_str(),
               std::string(size_t(width - filled), ' ').c_str(), done, total);
  if (done == total) std::fputc('\n', stderr);
}

struct GenerateArgs {
  std::filesystem::path model;
  uint32_t steps = 256, chunk = 128, seed = 0;
  double temperature = 0, top_p = 0.9;
  model::SelectionPlan plan;
  std::string prompt, json, logits;
};

GenerateArgs parse_generate_args(const Args& args) {
  if (!args.positional().empty()) throw InputError("generate: unexpected argument '" + args.positional()[0] + "'");
  if (args.has("prompt") && args.has("prompt-file")) throw InputError("generate: give --prompt or --prompt-file, not both");
  GenerateArgs a;
  a.model = args.required("model");
  a.steps = args.count("steps", 256, 1, 1u << 24);
  a.chunk = args.count("chunk", 128, 1, kMaxChunk);
  auto number = [&](const std::string& name, const std::string& fallback) {
    const std::string text = args.text(name, fallback);
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end || !std::isfinite(value)) throw InputError("generate: --" + name + " expects a number, got '" + text + "'");
    return value;
  };
  a.temperature = number("temperature", "0");
  a.top_p = number("top-p", "0.9");
  if (!(a.temperature >= 0) || !(a.top_p > 0 && a.top_p <= 1))
    throw InputError("generate: --temperature must be at least 0 and --top-p in (0, 1]");
  a.seed = args.count("seed", 0);
  a.plan = parse_selection_plan(args, "generate");
  a.prompt = args.has("prompt-file") ? model::read_text_file(args.text("prompt-file")) : args.text("prompt", "");
  a.json = args.text("json", "");
  a.logits = args.text("logits", "");
  for (const std::string& path : {a.json, a.logits})
    if (!path.empty()) require_output_folder(path);
  return a;
}

// What a run did, for the report.
struct Generated {
  size_t prompt_tokens = 0;
  uint32_t tokens = 0;
  std::vector<int32_t> ids;  // the generated tokens
  std::string text;
  double prefill_seconds = 0, decode_ms = 0;
};

nlohmann::json generate_json(const GenerateArgs& a, const std::string& device, const model::Model& runner, const Generated& g) {
  nlohmann::json j = {{"model", a.model.string()},
                      {"device", device},
                      {"prompt_tokens", g.prompt_tokens},
                      {"selection", model::plan_json(a.plan)},
                      {"generated_tokens", g.tokens},
                      {"generated_ids", g.ids},
                      {"generated_text", g.text},
                      {"time_to_first_token_ms", g.prefill_seconds * 1e3},
                      {"prefill_tokens_per_second", g.prompt_tokens / g.prefill_seconds},
                      {"decode_ms_per_token", g.decode_ms},
                      {"gpu_ms_by_stage", nlohmann::json::object()},
                      {"gpu_ms_by_part", runner.ms_by_part()}};
  for (const vk::StageTime& t : runner.stage_times()) j["gpu_ms_by_stage"][t.stage] = double(j["gpu_ms_by_stage"].value(t.stage, 0.0)) + t.milliseconds;
  return j;
}

}  // namespace

int run_generate(const GlobalOptions& global, const std::vector<std::string>& argv) {
  std::set<std::string> value_options{"model", "tokenizer", "prompt", "prompt-file", "steps", "temperature",
                                      "top-p",  "seed",      "chunk",  "json",        "logits"};
  value_options.merge(model_method_options());
  const Args args("generate", argv, value_options, {"random-weights"});
  const GenerateArgs a = parse_generate_args(args);
  Random random(a.seed);

  const model::Checkpoint checkpoint = open_model_checkpoint(args, a.model);
  const model::ModelConfig& config = checkpoint.config();
  const auto tokenizer = open_model_tokenizer(args, a.model, checkpoint);
  const std::vector<int32_t> tokens = model::prompt_tokens(*tokenizer, config, a.prompt);
  if (tokens.empty()) throw InputError("generate: an empty prompt needs a model with a BOS token");
  model::check_sequence_length(config, uint64_t(tokens.size()) + a.steps);

  vk::Device device(global.device);
  model::Model runner(device, checkpoint, uint32_t(tokens.size() + a.steps), a.chunk);
  runner.select(a.plan);
  const auto start = std::chrono::steady_clock::now();
  const bool show_progress = tokens.size() > 4 * size_t(runner.chunk());
  std::vector<float> prompt_logits;  // --logits: every prompt position's
  runner.prefill(tokens, !a.logits.empty(), [&](uint32_t done) {
    if (!a.logits.empty()) {
      const std::vector<float> chunk_logits = runner.logits();
      prompt_logits.insert(prompt_logits.end(), chunk_logits.begin(), chunk_logits.end());
    }
    if (show_progress) progress(done, uint32_t(tokens.size()));
  });
  if (!a.logits.empty())
    write_safetensors(a.logits,
                      {{"tokens", DType::i32, {tokens.size()}, std::as_bytes(std::span(tokens))},
                       {"logits", DType::f32, {tokens.size(), config.vocab}, std::as_bytes(std::span(prompt_logits))}},
                      {{"model", a.model.string()}, {"device", device.info().name}});
  auto choose = [&] { return a.temperature == 0 ? runner.greedy() : sample(runner.logits(), a.temperature, a.top_p, random); };
  int32_t previous = tokens.back(), next = choose();
  const auto first_token = std::chrono::steady_clock::now();
  Generated g;
  g.prompt_tokens = tokens.size();
  // Shows a chosen token; false at an end of sequence or the last step.
  auto emit = [&](int32_t token) {
    if (std::find(config.eos_tokens.begin(), config.eos_tokens.end(), token) != config.eos_tokens.end()) return false;
    const std::string piece = tokenizer->decode(previous, token);
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    ++g.tokens;
    g.ids.push_back(token);
    g.text += piece;
    previous = token;
    return g.tokens < a.steps;
  };
  if (a.temperature == 0) {  // greedy: the GPU passes each choice to the next step
    if (emit(next)) runner.append_greedy(next, a.steps - 1, emit);
  } else {
    while (emit(next)) {
      runner.append(std::span(&next, 1));
      next = choose();
    }
  }
  std::fputc('\n', stdout);
  const auto end = std::chrono::steady_clock::now();
  g.prefill_seconds = std::chrono::duration<double>(first_token - start).count();
  g.decode_ms = g.tokens > 1 ? std::chrono::duration<double, std::milli>(end - first_token).count() / (g.tokens - 1) : 0;
  std::fprintf(stderr, "kvscope: %zu prompt tokens in %.1f ms (%.0f tokens/s), %u generated at %.2f ms/token on %s\n",
               tokens.size(), g.prefill_seconds * 1e3, tokens.size() / g.prefill_seconds, g.tokens, g.decode_ms,
               device.info().name.c_str());
  if (!a.json.empty()) write_text_atomically(a.json, json_text(generate_json(a, device.info().name, runner, g), 2));
  return exit_code(global, device, 0);
}

}  // namespace kv::cli
