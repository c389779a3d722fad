#include <cstdio>
#include <nlohmann/json.hpp>

#include "args.h"
#include "bundled.h"
#include "commands.h"
#include "error.h"
#include "output_files.h"
#include "method_args.h"
#include "model/checkpoint.h"
#include "model/files.h"
#include "model/perplexity.h"
#include "model/prompts.h"
#include "model/tokenizer.h"
#include "validation.h"

namespace kv::cli {

const char* const kPplHelp =
    "usage: kvscope ppl --model PATH [--tokenizer PATH] [--text-file F] [--length T] [--scored N]\n"
    "                   [--methods M1,M2] [--budgets B1,B2] [--regime decode|prefill|both]\n"
    "                   [--chunk B] [--dense-layers L1,L2] [method options] [--json OUT]\n\n"
    "Perplexity of the first T tokens of a text (default 4096 of assets/text/licenses.txt,\n"
    "Debian's common licence texts), scored on its last N predictions (default 512), with\n"
    "each method and budget inside the model. decode (default): a dense prefill of the\n"
    "rest, then each scored token teacher-forced through a decode step with the method,\n"
    "as Fier's PG19 evaluation; prefill: every chunk of --chunk tokens through the\n"
    "method, the same positions scored. Dense runs both ways (the two agree to rounding).\n"
    "Defaults: --methods dense,quest,fier,streaming --budgets 64,256,1024.\n\n"
    "  --random-weights   --model is a config.json (or its folder), weights drawn on the\n"
    "                     device from --seed: speed at a model's real size (docs/model.md)\n"
    "  --chat             wrap each prompt as the model's chat template wraps one user\n"
    "                     turn (the format its tokenizer_config.json's or GGUF's\n"
    "                     template holds: llama3, chatml, inst or vicuna)\n"
    "  --chat-format NAME the same in that format, whatever the template\n";
namespace {

struct PplArgs {
  std::filesystem::path model;
  std::string text_file, json;
  uint32_t length = 4096;
  model::PerplexityConfig config;
};

PplArgs parse_ppl_args(const Args& args) {
  if (!args.positional().empty()) throw InputError("ppl: unexpected argument '" + args.positional()[0] + "'");
  PplArgs a;
  a.model = args.required("model");
  a.length = args.count("length", 4096, 16, 1u << 20);
  a.config.scored = args.count("scored", 512, 1, 1u << 20);
  a.config.sweep =
      parse_method_sweep(args, parse_regime(args, model::Regime::decode), "dense,quest,fier,streaming", {64, 256, 1024});
  a.config.chunk = args.count("chunk", 128, 1, kMaxChunk);
  a.text_file = args.text("text-file", bundled_asset("text/licenses.txt").string());
  a.json = args.text("json", "");
  if (!a.json.empty()) require_output_folder(a.json);
  return a;
}

nlohmann::json ppl_json(const PplArgs& a, const std::string& device, const std::vector<model::PerplexityResult>& results) {
  nlohmann::json j = model::perplexity_json(a.config, results);
  j["model"] = a.model.string();
  j["device"] = device;
  j["text"] = a.text_file;
  j["length"] = a.length;
  return j;
}

}  // namespace

int run_ppl(const GlobalOptions& global, const std::vector<std::string>& argv) {
  std::set<std::string> values{"model", "tokenizer", "text-file", "length", "scored", "chunk", "json", "seed"};
  values.merge(sweep_value_options());
  values.insert("chat-format");
  const Args args("ppl", argv, values, {"random-weights", "chat"});
  const PplArgs a = parse_ppl_args(args);
  const std::string text = model::read_text_file(a.text_file);

  const model::Checkpoint checkpoint = open_model_checkpoint(args, a.model);
  const auto tokenizer = open_chat_tokenizer(args, a.model, checkpoint);
  const std::vector<int32_t> tokens = model::perplexity_tokens(*tokenizer, checkpoint.config(), text, a.length, a.text_file);

  vk::Device device(global.device);
  const auto results = model::run_perplexity(device, checkpoint, tokens, a.config, runs_progress("ppl"));
  std::printf("ppl: %s, %u tokens of %s, the last %u scored, device %s\n", a.model.string().c_str(), a.length,
              a.text_file.c_str(), a.config.scored, device.info().name.c_str());
  std::printf("%-16s %7s %-8s %10s %12s\n", "method", "budget", "regime", "nll", "perplexity");
  for (const model::PerplexityResult& r : results)
    std::printf("%-16s %7s %-8s %10.4f %12.4f\n", r.method.c_str(), r.budget ? std::to_string(r.budget).c_str() : "-",
                model::regime_name(r.regime), r.mean_nll, r.perplexity());
  if (!a.json.empty()) write_text_atomically(a.json, json_text(ppl_json(a, device.info().name, results), 1));
  return exit_code(global, device, 0);
}

}  // namespace kv::cli
