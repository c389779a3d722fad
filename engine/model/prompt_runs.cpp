#include "model/prompt_runs.h"

#include <algorithm>

namespace kv::model {

void run_prompt_cells(Model& model, const MethodSweep& sweep, const std::vector<int32_t>& tokens, size_t first_cell,
                      const std::function<bool(size_t)>& wanted, const AnswerFrom& answer,
                      const std::function<void(const PromptRun&, const std::string&)>& said) {
  auto want = [&](size_t cell) { return !wanted || wanted(cell); };
  const uint32_t prompt_length = uint32_t(tokens.size());
  const std::vector<std::string> methods = sweep.selection_methods();
  const bool dense_wanted = sweep.has_dense() && want(first_cell);
  const size_t first_method_cell = first_cell + (sweep.has_dense() ? 1 : 0);
  std::vector<PromptRun> runs;  // each method and budget wanted, in the sweep's order
  for (size_t m = 0; m < methods.size(); ++m)
    for (size_t b = 0; b < sweep.budgets.size(); ++b) {
      const size_t cell = first_method_cell + m * sweep.budgets.size() + b;
      if (want(cell)) runs.push_back({cell, methods[m], sweep.budgets[b], plan_for(sweep, methods[m], sweep.budgets[b])});
    }

  const bool decode_regime = sweep.regime == Regime::decode && !runs.empty();
  if (dense_wanted || decode_regime) {
    model.select({});
    model.rewind(0);
    model.prefill(tokens);
    const int32_t first = model.greedy();
    if (dense_wanted) said({first_cell, "dense", 0, {}}, answer(first));
    if (decode_regime)
      for (const PromptRun& run : runs) {
        model.rewind(prompt_length);
        model.select(run.plan);
        said(run, answer(first));
      }
  }
  if (sweep.regime == Regime::decode) return;
  for (const PromptRun& run : runs) {
    model.select(run.plan);
    model.rewind(0);
    model.prefill(tokens);
    said(run, answer(model.greedy()));
  }
}

std::string greedy_answer(Model& model, const Tokenizer& tokenizer, int32_t previous, int32_t first, uint32_t steps,
                          const std::function<bool(const std::string&)>& enough) {
  const std::vector<int32_t>& ends = model.config().eos_tokens;
  auto is_end = [&](int32_t t) { return std::find(ends.begin(), ends.end(), t) != ends.end(); };
  std::string text;
  if (steps == 0 || is_end(first)) return text;
  text += tokenizer.decode(previous, first);
  previous = first;
  if (steps > 1 && !(enough && enough(text)))
    model.append_greedy(first, steps - 1, [&](int32_t next) {
      if (is_end(next)) return false;
      text += tokenizer.decode(previous, next);
      previous = next;
      return !(enough && enough(text));
    });
  return text;
}

}  // namespace kv::model
