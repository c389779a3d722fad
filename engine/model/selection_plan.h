#pragma once
// What selection a model run does, and the sweeps of runs that needle, ppl,
// speed and the viewer make: one vocabulary, one way from a sweep's
// (method, budget) to a plan, one JSON form of a plan that reproduces it.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "methods/method_options.h"

namespace kv::model {

// Which selection method runs inside the attention (docs/model.md): the same
// Method objects that eval runs, one per layer and block kind. A layer attends
// densely where no method is named for the block kind (decode step or prefill
// chunk), where it is one of dense_layers, and where the budget holds every
// candidate key (the first chunk of a prompt has none).
struct SelectionPlan {
  std::string decode_method;  // empty: dense decode steps
  uint32_t decode_budget = 0;
  std::string prefill_method;  // empty: dense prefill chunks
  uint32_t prefill_budget = 0;
  MethodOptions options;
  std::vector<uint32_t> dense_layers;

  bool any() const { return !decode_method.empty() || !prefill_method.empty(); }
  bool operator==(const SelectionPlan&) const = default;
};

// The plan whole: each block kind's method and budget, the dense layers, and
// the options its methods read (as the CLI spells them). plan_from_json reads
// it back; InputError naming the field where it is not such an object.
nlohmann::json plan_json(const SelectionPlan& plan);
SelectionPlan plan_from_json(const nlohmann::json& json);
// The options that the named methods read, as the CLI spells them.
nlohmann::json method_options_json(const std::vector<std::string>& methods, const MethodOptions& options);

// Where a sweep's methods act: in decode steps after a dense prefill, in
// prefill chunks with dense decode steps, or in both.
enum class Regime { decode, prefill, both };
const char* regime_name(Regime regime);
// InputError naming `text` and the regimes.
Regime parse_regime(const std::string& text);
// The regime a plan runs its methods in, by name; "dense" for the empty plan.
const char* plan_regime_name(const SelectionPlan& plan);

// Runs of a model with methods and budgets: what needle, ppl and speed sweep.
struct MethodSweep {
  std::vector<std::string> methods;  // "dense" and rows of method_table()
  std::vector<uint32_t> budgets;
  Regime regime = Regime::decode;
  uint32_t prefill_budget = 0;  // Regime::both: the prefill chunks' budget; 0: the decode budget
  std::vector<uint32_t> dense_layers;
  MethodOptions options;

  bool has_dense() const;
  // The methods other than dense, in the sweep's order.
  std::vector<std::string> selection_methods() const;
};

// InputError (setting "methods" or "budgets") for an empty sweep, an unknown
// method, one a model run cannot feed (it reads every past query, or builds
// from the whole cache at once), or methods other than dense without budgets.
void check_sweep(const MethodSweep& sweep);
// InputError (setting "methods") for a method a model run cannot feed.
void check_model_method(const std::string& method);

// The plan of one run of the sweep: `method` at `budget` in `regime`; dense
// (the empty plan) for "dense".
SelectionPlan plan_for(const MethodSweep& sweep, const std::string& method, uint32_t budget, Regime regime);
inline SelectionPlan plan_for(const MethodSweep& sweep, const std::string& method, uint32_t budget) {
  return plan_for(sweep, method, budget, sweep.regime);
}

}  // namespace kv::model
