#include "model/selection_plan.h"

#include <algorithm>

#include "base/error.h"
#include "methods/table.h"

namespace kv::model {

nlohmann::json method_options_json(const std::vector<std::string>& methods, const MethodOptions& options) {
  nlohmann::json j = nlohmann::json::object();
  for (const std::string& name : methods)
    if (!name.empty() && name != "dense")
      for (const char* flag : find_method(name).options) j[flag] = find_option(flag).text(options);
  return j;
}

nlohmann::json plan_json(const SelectionPlan& plan) {
  auto block_kind = [&](const std::string& name, uint32_t budget) {
    if (name.empty()) return nlohmann::json{{"method", "dense"}};
    return nlohmann::json{{"method", name}, {"budget", budget}};
  };
  return {{"decode", block_kind(plan.decode_method, plan.decode_budget)},
          {"prefill", block_kind(plan.prefill_method, plan.prefill_budget)},
          {"dense_layers", plan.dense_layers},
          {"options", method_options_json({plan.decode_method, plan.prefill_method}, plan.options)}};
}

SelectionPlan plan_from_json(const nlohmann::json& j) {
  SelectionPlan plan;
  try {
    auto block_kind = [&](const char* kind, std::string& name, uint32_t& budget) {
      const nlohmann::json& b = j.at(kind);
      name = b.at("method").get<std::string>();
      if (name == "dense") name.clear();
      else budget = b.at("budget").get<uint32_t>();
    };
    block_kind("decode", plan.decode_method, plan.decode_budget);
    block_kind("prefill", plan.prefill_method, plan.prefill_budget);
    plan.dense_layers = j.value("dense_layers", std::vector<uint32_t>{});
    const nlohmann::json options = j.value("options", nlohmann::json::object());
    for (const auto& [flag, text] : options.items()) find_option(flag).parse(plan.options, text.get<std::string>());
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("not a selection plan: ") + e.what(), "plan");
  }
  for (const std::string* name : {&plan.decode_method, &plan.prefill_method})
    if (!name->empty()) find_method(*name);
  return plan;
}

const char* regime_name(Regime regime) {
  switch (regime) {
    case Regime::decode: return "decode";
    case Regime::prefill: return "prefill";
    case Regime::both: return "both";
  }
  return "?";
}

Regime parse_regime(const std::string& text) {
  for (Regime r : {Regime::decode, Regime::prefill, Regime::both})
    if (text == regime_name(r)) return r;
  throw InputError("the regime is decode, prefill or both, not '" + text + "'", "regime");
}

const char* plan_regime_name(const SelectionPlan& plan) {
  if (!plan.any()) return "dense";
  if (plan.prefill_method.empty()) return regime_name(Regime::decode);
  return regime_name(plan.decode_method.empty() ? Regime::prefill : Regime::both);
}

bool MethodSweep::has_dense() const { return std::find(methods.begin(), methods.end(), "dense") != methods.end(); }

std::vector<std::string> MethodSweep::selection_methods() const {
  std::vector<std::string> names;
  for (const std::string& m : methods)
    if (m != "dense") names.push_back(m);
  return names;
}

void check_model_method(const std::string& name) {
  // Methods whose inputs a model run does not have: every past query (SnapKV,
  // H2O, SampleAttention), or every key of the cache at once (Loki's basis).
  const MethodSpec& spec = find_method(name);
  if (spec.reads_past_queries)
    throw InputError(name + " reads every past query, which a model run does not keep: run it with eval on a capture", "methods");
  if (spec.builds_from_whole_cache)
    throw InputError(name + " builds from the whole cache at once, which a model run fills as it goes: run it with eval on a capture",
                     "methods");
}

void check_sweep(const MethodSweep& sweep) {
  if (sweep.methods.empty()) throw InputError("no method to run", "methods");
  for (const std::string& m : sweep.selection_methods()) check_model_method(m);
  if (!sweep.selection_methods().empty() && sweep.budgets.empty())
    throw InputError("methods other than dense need at least one budget", "budgets");
  for (uint32_t b : sweep.budgets)
    if (b == 0) throw InputError("a budget must be positive", "budgets");
}

SelectionPlan plan_for(const MethodSweep& sweep, const std::string& method, uint32_t budget, Regime regime) {
  if (method == "dense") return {};
  SelectionPlan plan{.options = sweep.options, .dense_layers = sweep.dense_layers};
  if (regime != Regime::prefill) {
    plan.decode_method = method;
    plan.decode_budget = budget;
  }
  if (regime != Regime::decode) {
    plan.prefill_method = method;
    plan.prefill_budget = regime == Regime::both && sweep.prefill_budget ? sweep.prefill_budget : budget;
  }
  return plan;
}

}  // namespace kv::model
