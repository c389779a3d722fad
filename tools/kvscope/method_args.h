#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "args.h"
#include "methods/method.h"
#include "model/files.h"
#include "model/model.h"
#include "model/tokenizer.h"

namespace kv::cli {

// Options every selection command takes: each method option of option_table()
// (methods/table.h), and the regime's block options.
std::set<std::string> method_value_options();
inline const std::set<std::string> kModeFlags{"decode", "prefill"};

MethodOptions parse_method_options(const Args& args);
Mode parse_mode(const Args& args, const std::string& command);

// The model commands' method flags: --method/--budget for decode steps,
// --prefill-method/--prefill-budget for prefill chunks, --dense-layers, and
// every method option.
std::set<std::string> model_method_options();
model::SelectionPlan parse_selection_plan(const Args& args, const std::string& command);
extern const char* const kModelMethodsHelp;
// The sweeps with a model (needle, ppl, speed): --methods (dense and
// method names), --budgets (key counts, or percentages of `percent_of`
// tokens where it is not 0), --regime, --dense-layers, every method option,
// and --prefill-budget where the command declares it. With `variants`, a
// method option may list values (--gqa-agg head,max): every combination
// lands there, the sweep's options the first.
std::set<std::string> sweep_value_options();
// --regime, or `fallback`.
model::Regime parse_regime(const Args& args, model::Regime fallback);
model::MethodSweep parse_method_sweep(const Args& args, model::Regime regime,
                                      const std::string& default_methods, const std::vector<uint32_t>& default_budgets,
                                      uint32_t percent_of = 0, std::vector<MethodOptions>* variants = nullptr);

// A sweep's progress on stderr, when it is a terminal: "LABEL: D/N runs, S s".
std::function<void(size_t done, size_t total)> runs_progress(const std::string& label);

// --model PATH, or with --random-weights the config.json at PATH (or in the
// folder PATH) with random weights drawn from --seed (default 0).
model::Checkpoint open_model_checkpoint(const Args& args, const std::filesystem::path& model_path);
// --tokenizer PATH, or the model's own (model::default_tokenizer); for random
// weights the tokenizer.json beside the config, else token ids
// (model::token_id_tokenizer).
std::unique_ptr<model::Tokenizer> open_model_tokenizer(const Args& args, const std::filesystem::path& model_path,
                                                       const model::Checkpoint& checkpoint);
// The same, wrapping each prompt as the model's chat template wraps one user
// turn with --chat (the format its template holds) or --chat-format NAME.
std::unique_ptr<model::Tokenizer> open_chat_tokenizer(const Args& args, const std::filesystem::path& model_path,
                                                      const model::Checkpoint& checkpoint);

// The methods and their options, as --help lists them (from method_table()).
std::string methods_help();

}  // namespace kv::cli
