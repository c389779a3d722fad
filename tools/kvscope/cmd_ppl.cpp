#include <cstdio>
#include <nlohmann/json.hpp>

#include "args.h"
#include "io/bundled.h"
#include "commands.h"
#include "base/error.h"
#include "output_files.h"
#include "method_args.h"
#include "model/checkpoint.h"
#include "model/files.h"
#include "model/perplexity.h"
#include "model/prompts.h"
#include "model/tokenizer.h"
#include "sweep_args.h"
#include "validation.h"

namespace kv::cli {

const char* const kPplHelp =
    "usage: kvscope ppl --model PATH [--tokenizer PATH] [--text-file F] [--length T] [--scored N]\n"
    "                   [--methods M1,M2] [--budgets B1,B2] [--regime decode|prefill|both]\n"
    "                   [--chunk B] [--dense-layers L1,L2] [method options] [--json OUT]\n"
    "                   [--results F.jsonl [--resume] [--shard I/N]]\n\n"
    "Perplexity of the first T tokens of a text (default 4096 of assets/text/licenses.txt,\n"
    "Debian's common licence texts), scored on its last N predictions (default 512), with\n"
    "each method and budget inside the model. decode (default): a dense prefill of the\n"
    "rest, then each scored token teacher-forced through a decode step with the method,\n"
    "as Fier's PG19 evaluation; prefill: every chunk of --chunk tokens through the\n"
    "method, the same positions scored. Dense runs both ways (the two agree to rounding).\n"
    "Defaults: --methods dense,quest,fier,streaming --budgets 64,256,1024.\n"
    "A cell is one method, budget and path scored, a slice of --shard of its own:\n"
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

}  // namespace

int run_ppl(const GlobalOptions& global, const std::vector<std::string>& argv) {
  std::set<std::string> values{"model", "tokenizer", "text-file", "length", "scored", "chunk", "json", "seed", "weight-type"};
  values.merge(sweep_value_options());
  values.merge(results_value_options());
  values.insert("chat-format");
  const Args args("ppl", argv, values, {"random-weights", "chat", kResumeFlag});
  const PplArgs a = parse_ppl_args(args);
  check_sweep_options(args, "ppl");
  const std::string text = model::read_text_file(a.text_file);

  const model::Checkpoint checkpoint = open_model_checkpoint(args, a.model);
  const auto tokenizer = open_chat_tokenizer(args, a.model, checkpoint);
  const std::vector<int32_t> tokens = model::perplexity_tokens(*tokenizer, checkpoint.config(), text, a.length, a.text_file);

  vk::Device device(global.device);
  nlohmann::json config = model::perplexity_settings_json(a.config);
  config.update(model_identity_json(args, a.model.string()));
  config["device"] = device.info().name;
  config["text"] = a.text_file;
  config["length"] = a.length;
  const auto sweep = open_sweep(args, "ppl", config, model::perplexity_cells(a.config));
  sweep::CellHooks<model::PerplexityResult> hooks;
  hooks.wanted = [&](size_t cell) { return sweep->wanted(cell); };
  hooks.done = [&](size_t cell, const model::PerplexityResult& r) { sweep->record(cell, model::perplexity_result_json(r)); };
  model::run_perplexity(device, checkpoint, tokens, a.config, runs_progress("ppl"), hooks);

  std::printf("ppl: %s, %u tokens of %s, the last %u scored, device %s\n", a.model.string().c_str(), a.length,
              a.text_file.c_str(), a.config.scored, device.info().name.c_str());
  std::printf("%-16s %7s %-8s %10s %12s\n", "method", "budget", "regime", "nll", "perplexity");
  // Held by name: a range-for over a member of the temporary report would read it after its end.
  const nlohmann::json report = sweep::report_json(sweep->header(), sweep->results());
  for (const nlohmann::json& r : report.at("results")) {
    const uint32_t budget = r.at("budget").get<uint32_t>();
    std::printf("%-16s %7s %-8s %10.4f %12.4f\n", r.at("method").get<std::string>().c_str(),
                budget ? std::to_string(budget).c_str() : "-", r.at("regime").get<std::string>().c_str(),
                r.at("mean_nll").get<double>(), r.at("perplexity").get<double>());
  }
  write_sweep_reports(*sweep, {a.json, "", ""});
  return exit_code(global, device, 0);
}

}  // namespace kv::cli
