#include "method_args.h"

#include "model/chat.h"
#include "model/generate.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "base/error.h"
#include "methods/table.h"
#include "model/generate.h"

namespace kv::cli {

std::set<std::string> method_value_options() {
  std::set<std::string> options{"probes", "chunk", "chunks"};
  for (const OptionSpec& o : option_table()) options.insert(o.flag);
  return options;
}

MethodOptions parse_method_options(const Args& args) {
  MethodOptions options;
  for (const OptionSpec& o : option_table())
    if (args.has(o.flag)) o.parse(options, args.text(o.flag));
  return options;
}

std::set<std::string> model_method_options() {
  std::set<std::string> options{"method", "budget", "prefill-method", "prefill-budget", "dense-layers"};
  for (const OptionSpec& o : option_table()) options.insert(o.flag);
  return options;
}

const char* const kModelMethodsHelp =
    "\nselection inside the model's attention (docs/model.md):\n"
    "  --method M --budget B\n"
    "                     the selection method inside each decode step's attention,\n"
    "                     keeping B keys of the cache (default: dense)\n"
    "  --prefill-method M --prefill-budget B\n"
    "                     the method inside each prefill chunk's attention, B past\n"
    "                     keys plus the chunk's own (default: dense)\n"
    "  --dense-layers L1,L2\n"
    "                     layers that stay dense (Quest keeps layers 0,1 dense)\n"
    "                     A layer also attends densely where the budget holds every\n"
    "                     key it could pick. Methods that read every past query\n"
    "                     (snapkv, h2o, sampleattention) or build from the whole cache\n"
    "                     (loki) run only with eval on a capture.\n";

model::SelectionPlan parse_selection_plan(const Args& args, const std::string& command) {
  model::SelectionPlan plan;
  plan.options = parse_method_options(args);
  auto method = [&](const std::string& flag, const std::string& budget_flag, std::string& name, uint32_t& budget) {
    name = args.text(flag, "");
    if (name == "dense") name.clear();
    if (!name.empty()) {
      find_method(name);  // an unknown name, with the list
      budget = args.required_count(budget_flag, 1, UINT32_MAX);
    } else if (args.has(budget_flag)) {
      throw InputError(command + ": --" + budget_flag + " needs --" + flag);
    }
  };
  method("method", "budget", plan.decode_method, plan.decode_budget);
  method("prefill-method", "prefill-budget", plan.prefill_method, plan.prefill_budget);
  if (args.has("dense-layers")) plan.dense_layers = args.counts("dense-layers");
  return plan;
}

std::set<std::string> sweep_value_options() {
  std::set<std::string> options{"methods", "budgets", "regime", "dense-layers"};
  for (const OptionSpec& o : option_table()) options.insert(o.flag);
  return options;
}

model::Regime parse_regime(const Args& args, model::Regime fallback) {
  return args.has("regime") ? model::parse_regime(args.text("regime")) : fallback;
}

model::MethodSweep parse_method_sweep(const Args& args, model::Regime regime,
                                      const std::string& default_methods, const std::vector<uint32_t>& default_budgets,
                                      uint32_t percent_of, std::vector<MethodOptions>* variants) {
  model::MethodSweep sweep;
  sweep.methods = args.texts("methods", default_methods);
  sweep.budgets = default_budgets;
  if (args.has("budgets")) {
    sweep.budgets.clear();
    for (const std::string& text : args.texts("budgets", "")) {
      if (!percent_of && text.find('%') != std::string::npos)
        throw InputError("key counts here, not '" + text + "'", "budgets");
      sweep.budgets.push_back(parse_budget(text, percent_of, args.command() + ": --budgets"));
    }
  }
  sweep.regime = regime;
  sweep.prefill_budget = args.count("prefill-budget", 0, 1);
  if (args.has("dense-layers")) sweep.dense_layers = args.counts("dense-layers");
  if (variants) {
    *variants = {MethodOptions{}};
    for (const OptionSpec& o : option_table()) {
      if (!args.has(o.flag)) continue;
      std::vector<MethodOptions> combined;
      for (const std::string& value : args.texts(o.flag, ""))
        for (MethodOptions options : *variants) {
          o.parse(options, value);
          combined.push_back(options);
        }
      if (combined.empty()) throw InputError("no value given", o.flag);
      *variants = std::move(combined);
    }
    sweep.options = variants->front();
  } else {
    sweep.options = parse_method_options(args);
  }
  model::check_sweep(sweep);  // no method, an unknown or unrunnable one, a missing or zero budget
  return sweep;
}

std::function<void(size_t, size_t)> runs_progress(const std::string& label) {
  const auto start = std::chrono::steady_clock::now();
  return [label, start](size_t done, size_t total) {
    if (!isatty(STDERR_FILENO)) return;
    std::fprintf(stderr, "\r%s: %zu/%zu runs, %.0f s", label.c_str(), done, total,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (done == total) std::fputc('\n', stderr);
  };
}

model::Checkpoint open_model_checkpoint(const Args& args, const std::filesystem::path& model_path) {
  const std::optional<model::WeightType> type = model::parse_weight_type(args.text("weight-type", "f16"));
  if (args.flag("random-weights")) return model::Checkpoint::random(model_path, args.count("seed", 0), type);
  model::Checkpoint checkpoint = model::Checkpoint::open(model_path);
  if (type) checkpoint.quantize(*type);
  return checkpoint;
}

std::unique_ptr<model::Tokenizer> open_model_tokenizer(const Args& args, const std::filesystem::path& model_path,
                                                       const model::Checkpoint& checkpoint) {
  return model::model_tokenizer(model_path, checkpoint, args.text("tokenizer", ""));
}

std::unique_ptr<model::Tokenizer> open_chat_tokenizer(const Args& args, const std::filesystem::path& model_path,
                                                      const model::Checkpoint& checkpoint) {
  std::unique_ptr<model::Tokenizer> tokenizer = open_model_tokenizer(args, model_path, checkpoint);
  if (!args.flag("chat") && !args.has("chat-format")) return tokenizer;
  const model::ChatFormat format =
      model::model_chat_format(model_path, checkpoint, args.text("tokenizer", ""), args.text("chat-format", ""));
  return model::chat_tokenizer(std::move(tokenizer), format);
}

Mode parse_mode(const Args& args, const std::string& command) {
  if (args.flag("decode") == args.flag("prefill"))
    throw InputError(command + ": give exactly one of --decode and --prefill");
  return args.flag("decode") ? Mode::decode : Mode::prefill;
}

std::string methods_help() {
  std::string help = "\nmethods (docs/methods.md):\n  dense            every key (the reference for coverage and error)\n";
  for (const MethodSpec& m : method_table()) {
    std::string line = "  " + std::string(m.name);
    line.resize(std::max<size_t>(line.size() + 1, 19), ' ');
    help += line + m.summary + "\n";
  }
  help += "\nmethod options (each read only by the methods named):\n";
  const MethodOptions defaults;
  for (const OptionSpec& o : option_table()) {
    std::string values;
    for (const char* name : o.names) values.append(values.empty() ? "" : "|").append(name);
    std::string line = "  --" + std::string(o.flag) + " " + (values.empty() ? "N" : values);
    line.resize(std::max<size_t>(line.size() + 1, 31), ' ');
    help += line + o.help + "; default " + o.text(defaults) + "\n";
  }
  return help;
}

}  // namespace kv::cli
