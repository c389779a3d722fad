#include "ruler/ruler.h"

#include <algorithm>
#include <map>

#include "base/error.h"
#include "model/model.h"
#include "model/prompt_runs.h"
#include "model/prompts.h"

namespace kv::ruler {
namespace {

struct RulerGroup {
  const TaskSpec* task;
  uint32_t length;
  size_t first_cell;
};

std::vector<RulerGroup> ruler_groups(const RulerConfig& c) {
  std::vector<RulerGroup> groups;
  for (uint32_t length : c.lengths)
    for (const std::string& name : c.tasks) groups.push_back({&find_task(name), length, groups.size() * model::prompt_cells(c.sweep)});
  return groups;
}

}  // namespace

sweep::SweepCells ruler_cells(const RulerConfig& c) {
  sweep::SweepCells cells;
  const std::string regime = model::regime_name(c.sweep.regime);
  const bool decode = c.sweep.regime == model::Regime::decode;
  const double runs = double(model::prompt_cells(c.sweep));
  const double prefills = (c.sweep.has_dense() || decode ? 1 : 0) + (decode ? 0 : runs - (c.sweep.has_dense() ? 1 : 0));
  for (const RulerGroup& g : ruler_groups(c)) {
    const uint32_t group = uint32_t(cells.group_costs.size());
    auto key = [&](const std::string& method, uint32_t budget) {
      return nlohmann::json{{"task", g.task->name}, {"length", g.length}, {"method", method}, {"budget", budget},
                            {"regime", method == "dense" ? "dense" : regime}};
    };
    if (c.sweep.has_dense()) cells.add(key("dense", 0), group);
    for (const std::string& m : c.sweep.selection_methods())
      for (uint32_t budget : c.sweep.budgets) cells.add(key(m, budget), group);
    // Prefills grow with the length and its square; each decode step reads the cache.
    const double L = g.length;
    cells.group_costs.push_back(c.samples * (prefills * L * (1 + L / 32768) + runs * g.task->tokens_to_generate * L / 256));
  }
  return cells;
}

nlohmann::json ruler_settings_json(const RulerConfig& c) {
  return {{"tasks", c.tasks},
          {"lengths", c.lengths},
          {"samples", c.samples},
          {"seed", c.seed},
          {"chunk", c.chunk},
          {"max_generate", c.max_generate},
          {"regime", model::regime_name(c.sweep.regime)},
          {"prefill_budget", c.sweep.prefill_budget},
          {"options", model::method_options_json(c.sweep.methods, c.sweep.options)},
          {"dense_layers", c.sweep.dense_layers},
          {"words", c.texts.words.size()}};
}

nlohmann::json ruler_result_json(const RulerResult& r) {
  return {{"task", r.task},       {"length", r.length},           {"method", r.method},
          {"budget", r.budget},   {"regime", model::plan_regime_name(r.plan)},
          {"plan", model::plan_json(r.plan)},
          {"score", r.score()},   {"samples", r.samples},         {"predictions", r.predictions},
          {"references", r.references}};
}

std::vector<RulerResult> run_ruler(const vk::Device& device, const model::Checkpoint& checkpoint,
                                   const model::Tokenizer& tokenizer, const RulerConfig& c, const RulerProgress& progress,
                                   const sweep::CellHooks<RulerResult>& hooks) {
  if (c.tasks.empty()) throw InputError("no task", "tasks");
  if (c.lengths.empty()) throw InputError("no length", "lengths");
  if (c.samples == 0) throw InputError("no sample", "samples");
  for (const std::string& name : c.tasks) find_task(name);
  model::require_text_tokenizer(tokenizer, "ruler");
  model::check_sweep(c.sweep);
  model::check_sequence_length(checkpoint.config(), *std::max_element(c.lengths.begin(), c.lengths.end()));

  for (const RulerGroup& g : ruler_groups(c)) check_length(*g.task, tokenizer, checkpoint.config(), c.texts, g.length);

  size_t wanted_cells = 0;
  const std::vector<RulerGroup> groups = model::groups_with_wanted_cells(
      ruler_groups(c), model::prompt_cells(c.sweep), [&](size_t cell) { return hooks.want(cell); }, wanted_cells);
  const size_t runs = wanted_cells * c.samples;
  std::map<size_t, RulerResult> cells;  // by cell: the sweep's order
  if (groups.empty()) return {};
  uint32_t longest = 0;
  for (const RulerGroup& g : groups) longest = std::max(longest, g.length);
  model::Model model(device, checkpoint, longest, c.chunk);
  size_t done = 0;
  for (const RulerGroup& g : groups)
    for (uint32_t sample = 0; sample < c.samples; ++sample) {
      const RulerPrompt prompt = ruler_prompt(*g.task, tokenizer, checkpoint.config(), c.texts, g.length, c.seed, sample);
      const uint32_t steps = c.max_generate ? std::min(c.max_generate, prompt.generate) : prompt.generate;
      auto answer = [&](int32_t first) {
        return model::greedy_answer(model, tokenizer, prompt.tokens.back(), first, steps, [&](const std::string& text) {
          return string_match_all(text, prompt.outputs) == 1.0;
        });
      };
      model::run_prompt_cells(
          model, c.sweep, prompt.tokens, g.first_cell, [&](size_t cell) { return hooks.want(cell); }, answer,
          [&](const model::PromptRun& run, const std::string& said) {
            auto it = cells.find(run.cell);
            if (it == cells.end())
              it = cells.emplace(run.cell, RulerResult{g.task->name, g.length, run.method, run.budget, run.plan}).first;
            RulerResult& r = it->second;
            r.matched += string_match_all(said, prompt.outputs);
            r.samples += 1;
            r.predictions.push_back(said);
            r.references.push_back(prompt.outputs);
            if (r.samples == c.samples && hooks.done) hooks.done(run.cell, r);
            if (progress) progress(++done, runs);
          });
    }
  std::vector<RulerResult> all;
  for (auto& [cell, r] : cells) all.push_back(std::move(r));
  return all;
}

}  // namespace kv::ruler
