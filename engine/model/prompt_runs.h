#pragma once
// One prompt through the model with dense and each method and budget of a
// sweep, as the seed papers' retrieval tests run it (needle, RULER): in the
// decode regime one dense prefill serves dense and every method, each
// rewinding to the prompt's end and decoding from the same first token (the
// answer's first token comes from the prompt's last position); in the
// prefill and both regimes each method prefills the prompt itself.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/model.h"
#include "model/selection_plan.h"
#include "model/tokenizer.h"

namespace kv::model {

// A run of a prompt: the cell it scores (an index into its sweep's cells)
// and the plan it ran with (dense: the empty plan).
struct PromptRun {
  size_t cell = 0;
  std::string method;
  uint32_t budget = 0;
  SelectionPlan plan;
};

// What the model says after the prompt, generated greedily from `first`
// (the choice at the prompt's last position).
using AnswerFrom = std::function<std::string(int32_t first)>;

// The runs of one prompt whose cells `wanted` keeps: dense at `first_cell`
// (if the sweep has it), then each method and budget in the sweep's order;
// `said` gets each run's answer.
void run_prompt_cells(Model& model, const MethodSweep& sweep, const std::vector<int32_t>& tokens, size_t first_cell,
                      const std::function<bool(size_t cell)>& wanted, const AnswerFrom& answer,
                      const std::function<void(const PromptRun& run, const std::string& said)>& said);

// The cells of one prompt of a sweep, the order run_prompt_cells gives them:
// dense (if swept), then each method and budget.
inline size_t prompt_cells(const MethodSweep& sweep) {
  return (sweep.has_dense() ? 1 : 0) + sweep.selection_methods().size() * sweep.budgets.size();
}

// The groups of a prompt sweep (needle's (length, depth), RULER's (task,
// length)) that hold a cell `want` keeps, each group `per_group` cells from
// its first_cell, and in `cells` how many cells they keep: a shard or a
// resumed sweep runs only those, its model sized for the longest of them.
template <typename Group, typename Want>
std::vector<Group> groups_with_wanted_cells(const std::vector<Group>& groups, size_t per_group, const Want& want,
                                            size_t& cells) {
  std::vector<Group> kept;
  cells = 0;
  for (const Group& g : groups) {
    size_t wanted = 0;
    for (size_t cell = g.first_cell; cell < g.first_cell + per_group; ++cell) wanted += want(cell) ? 1 : 0;
    if (wanted == 0) continue;
    kept.push_back(g);
    cells += wanted;
  }
  return kept;
}

// Up to `steps` tokens generated greedily from `first` on `model` (`previous`
// the prompt's last token, for the tokenizer's spacing), as text: fewer at an
// end of sequence, or once `enough` (if set) says the text so far suffices.
std::string greedy_answer(Model& model, const Tokenizer& tokenizer, int32_t previous, int32_t first, uint32_t steps,
                          const std::function<bool(const std::string& text)>& enough = {});

}  // namespace kv::model
