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
    "Defaults: --methods dense,quest,fier,streaming --budgets 64,256,1024.\n";

int run_ppl(const GlobalOptions& global, const std::vector<std::string>& argv) {
  std::set<std::string> values{"model", "tokenizer", "text-file", "length", "scored", "regime", "chunk", "json"};
  values.merge(sweep_value_options());
  Args args("ppl", argv, values, {});
  if (!args.positional().empty()) throw InputError("ppl: unexpected argument '" + args.positional()[0] + "'");
  const std::filesystem::path model_path = args.required("model");
  model::PerplexityConfig config;
  const uint32_t length = args.count("length", 4096, 16, 1u << 20);
  config.scored = args.count("scored", 512, 1, 1u << 20);
  const MethodSweepArgs sweep = parse_method_sweep(args, "ppl", "dense,quest,fier,streaming", {64, 256, 1024});
  config.methods = sweep.methods;
  config.budgets = sweep.budgets;
  config.dense_layers = sweep.dense_layers;
  config.options = sweep.options;
  const std::string regime = args.text("regime", "decode");
  if (regime != "decode" && regime != "prefill" && regime != "both")
    throw InputError("ppl: --regime is decode, prefill or both, not '" + regime + "'");
  config.decode = regime != "prefill";
  config.prefill = regime != "decode";
  config.chunk = args.count("chunk", 128, 1, 4096);
  const std::string text_path = args.text("text-file", KVSCOPE_DEFAULT_HAYSTACK), json_path = args.text("json", "");
  if (!json_path.empty()) require_output_folder(json_path);
  const std::string text = model::read_text_file(text_path);

  const model::Checkpoint checkpoint = model::Checkpoint::open(model_path);
  const auto tokenizer = open_model_tokenizer(args, model_path, checkpoint);
  std::vector<int32_t> tokens = model::prompt_tokens(*tokenizer, checkpoint.config(), text);
  if (tokens.size() < length)
    throw InputError("ppl: " + text_path + " holds " + std::to_string(tokens.size()) + " tokens, fewer than --length " + std::to_string(length));
  tokens.resize(length);

  vk::Device device(global.device);
  const auto start = std::chrono::steady_clock::now();
  const auto results = model::run_perplexity(device, checkpoint, tokens, config, [&](size_t done, size_t total) {
    if (!isatty(STDERR_FILENO)) return;
    std::fprintf(stderr, "\rppl %zu/%zu runs, %.0f s", done, total,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (done == total) std::fputc('\n', stderr);
  });
  std::printf("ppl: %s, %u tokens of %s, the last %u scored, device %s\n", model_path.string().c_str(), length,
              text_path.c_str(), config.scored, device.info().name.c_str());
  std::printf("%-16s %7s %-8s %10s %12s\n", "method", "budget", "regime", "nll", "perplexity");
  nlohmann::json all = nlohmann::json::array();
  for (const model::PerplexityResult& r : results) {
    std::printf("%-16s %7s %-8s %10.4f %12.4f\n", r.method.c_str(), r.budget ? std::to_string(r.budget).c_str() : "-",
                r.regime.c_str(), r.mean_nll, r.perplexity());
    all.push_back({{"method", r.method}, {"budget", r.budget}, {"regime", r.regime}, {"mean_nll", r.mean_nll},
                   {"perplexity", r.perplexity()}, {"scored", r.scored}});
  }
  if (!json_path.empty())
    write_text_atomically(json_path, nlohmann::json{{"model", model_path.string()}, {"device", device.info().name},
                                                    {"text", text_path}, {"length", length}, {"chunk", config.chunk},
                                                    {"dense_layers", config.dense_layers},
                                                    {"options", method_options_json(config.methods, config.options)},
                                                    {"results", all}}
                                         .dump(1) + "\n");
  return exit_code(global, device, 0);
}

}  // namespace kv::cli
