#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "args.h"
#include "commands.h"
#include "base/error.h"
#include "output_files.h"
#include "method_args.h"
#include "model/checkpoint.h"
#include "model/files.h"
#include "model/generate.h"
#include "io/safetensors.h"
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
    "                     device from --seed: speed at a model's real size (docs/model.md)\n"
    "  --weight-type T    the matrices as ggml blocks of T: q8_0, q4_0, q4_1, q5_0, q5_1,\n"
    "                     q2_k .. q6_k, q4_k_m, q5_k_m (drawn so, or quantized at load), or f16\n"
    "  --chat             wrap each prompt as the model's chat template wraps one user\n"
    "                     turn (the format its tokenizer_config.json's or GGUF's\n"
    "                     template holds: llama3, chatml, inst or vicuna)\n"
    "  --chat-format NAME the same in that format, whatever the template\n";
namespace {

void progress(uint32_t done, uint32_t total) {
  const int width = 40, filled = int(double(done) / total * width);
  std::fprintf(stderr, "\rprefill [%s%s] %u/%u tokens", std::string(size_t(filled), '#').c_str(),
               std::string(size_t(width - filled), ' ').c_str(), done, total);
  if (done == total) std::fputc('\n', stderr);
}

struct GenerateArgs {
  std::filesystem::path model;
  model::GenerateConfig config;
  std::string prompt, json, logits;
};

GenerateArgs parse_generate_args(const Args& args) {
  if (!args.positional().empty()) throw InputError("generate: unexpected argument '" + args.positional()[0] + "'");
  if (args.has("prompt") && args.has("prompt-file")) throw InputError("generate: give --prompt or --prompt-file, not both");
  GenerateArgs a;
  a.model = args.required("model");
  a.config.steps = args.count("steps", 256, 1, 1u << 24);
  a.config.chunk = args.count("chunk", 128, 1, kMaxChunk);
  auto number = [&](const std::string& name, const std::string& fallback) {
    const std::string text = args.text(name, fallback);
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end || !std::isfinite(value)) throw InputError("generate: --" + name + " expects a number, got '" + text + "'");
    return value;
  };
  a.config.temperature = number("temperature", "0");
  a.config.top_p = number("top-p", "0.9");
  if (!(a.config.temperature >= 0) || !(a.config.top_p > 0 && a.config.top_p <= 1))
    throw InputError("generate: --temperature must be at least 0 and --top-p in (0, 1]");
  a.config.seed = args.count("seed", 0);
  a.config.plan = parse_selection_plan(args, "generate");
  a.prompt = args.has("prompt-file") ? model::read_text_file(args.text("prompt-file")) : args.text("prompt", "");
  a.json = args.text("json", "");
  a.logits = args.text("logits", "");
  a.config.prompt_logits = !a.logits.empty();
  for (const std::string& path : {a.json, a.logits})
    if (!path.empty()) require_output_folder(path);
  return a;
}

nlohmann::json generate_json(const GenerateArgs& a, const std::string& device, const model::Generation& g) {
  nlohmann::json j = {{"model", a.model.string()},
                      {"device", device},
                      {"prompt_tokens", g.prompt.size()},
                      {"selection", model::plan_json(a.config.plan)},
                      {"generated_tokens", g.ids.size()},
                      {"generated_ids", g.ids},
                      {"generated_text", g.text},
                      {"time_to_first_token_ms", g.prefill_seconds * 1e3},
                      {"prefill_tokens_per_second", g.prompt.size() / g.prefill_seconds},
                      {"decode_ms_per_token", g.decode_ms},
                      {"gpu_ms_by_stage", nlohmann::json::object()},
                      {"gpu_ms_by_part", g.ms_by_part}};
  for (const vk::StageTime& t : g.stage_times) j["gpu_ms_by_stage"][t.stage] = double(j["gpu_ms_by_stage"].value(t.stage, 0.0)) + t.milliseconds;
  return j;
}

}  // namespace

int run_generate(const GlobalOptions& global, const std::vector<std::string>& argv) {
  std::set<std::string> value_options{"model", "tokenizer", "prompt", "prompt-file", "steps", "temperature",
                                      "top-p",  "seed", "weight-type",      "chunk",  "json",        "logits"};
  value_options.merge(model_method_options());
  value_options.insert("chat-format");
  const Args args("generate", argv, value_options, {"random-weights", "chat"});
  const GenerateArgs a = parse_generate_args(args);
  const model::Checkpoint checkpoint = open_model_checkpoint(args, a.model);
  const auto tokenizer = open_chat_tokenizer(args, a.model, checkpoint);
  vk::Device device(global.device);
  const model::Generation g = model::generate(
      device, checkpoint, *tokenizer, a.prompt, a.config,
      [](const std::string& piece) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
      },
      [&](uint32_t done, uint32_t total) {
        if (total > 4 * a.config.chunk) progress(done, total);
      });
  std::fputc('\n', stdout);
  if (!a.logits.empty())
    write_safetensors(a.logits,
                      {{"tokens", DType::i32, {g.prompt.size()}, std::as_bytes(std::span(g.prompt))},
                       {"logits", DType::f32, {g.prompt.size(), checkpoint.config().vocab}, std::as_bytes(std::span(g.prompt_logits))}},
                      {{"model", a.model.string()}, {"device", device.info().name}});
  std::fprintf(stderr, "kvscope: %zu prompt tokens in %.1f ms (%.0f tokens/s), %zu generated at %.2f ms/token on %s\n",
               g.prompt.size(), g.prefill_seconds * 1e3, g.prompt.size() / g.prefill_seconds, g.ids.size(), g.decode_ms,
               device.info().name.c_str());
  if (!a.json.empty()) write_text_atomically(a.json, json_text(generate_json(a, device.info().name, g), 2));
  return exit_code(global, device, 0);
}

}  // namespace kv::cli
