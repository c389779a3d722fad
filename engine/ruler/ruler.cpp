#include "ruler/ruler.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "base/error.h"
#include "model/model.h"
#include "model/prompt_runs.h"
#include "model/prompts.h"

namespace kv::ruler {
namespace {

struct RulerGroup {
  const TaskSpec* task;        // generated prompts' task,
  const RulerTaskFile* file;   // or RULER's file
  uint32_t length;             // with a file: the largest of its records' lengths
  size_t first_cell;
  std::string name() const { return task ? task->name : file->task; }
  uint32_t samples(const RulerConfig& c) const { return task ? c.samples : uint32_t(file->records.size()); }
  // With a file --tokens-to-generate is the count (as RULER's call_api.py
  // takes it from the task), for generated prompts at most the task's.
  uint32_t generate(const RulerConfig& c) const {
    if (file) return c.max_generate ? c.max_generate : file->tokens_to_generate;
    return c.max_generate ? std::min(c.max_generate, task->tokens_to_generate) : task->tokens_to_generate;
  }
};

std::vector<RulerGroup> ruler_groups(const RulerConfig& c) {
  std::vector<RulerGroup> groups;
  const size_t per_group = model::prompt_cells(c.sweep);
  if (!c.files.empty()) {
    for (const RulerTaskFile& f : c.files) groups.push_back({nullptr, &f, f.longest(), groups.size() * per_group});
    return groups;
  }
  for (uint32_t length : c.lengths)
    for (const std::string& name : c.tasks) groups.push_back({&find_task(name), nullptr, length, groups.size() * per_group});
  return groups;
}

// The prompt of a file's record as RULER's call_api.py sends it: input +
// answer_prefix, tokenized as a Hugging Face tokenizer does by default (the
// model's BOS first; a template that writes its own BOS text gets two, as
// with RULER's HuggingFaceModel).
std::vector<int32_t> record_tokens(const model::Tokenizer& tokenizer, const model::ModelConfig& config, const RulerRecord& r) {
  return model::prompt_tokens(tokenizer, config, r.input + r.answer_prefix);
}

}  // namespace

void read_ruler_files(RulerConfig& config, const std::filesystem::path& dir, std::vector<std::string> tasks,
                      uint32_t max_records) {
  config.tasks = tasks.empty() ? ruler_data_tasks(dir) : std::move(tasks);
  config.files.clear();
  for (const std::string& task : config.tasks) config.files.push_back(read_ruler_task(dir, task, max_records));
  config.data_dir = std::filesystem::absolute(dir).lexically_normal().string();
}

sweep::SweepCells ruler_cells(const RulerConfig& c) {
  sweep::SweepCells cells;
  const std::string regime = model::regime_name(c.sweep.regime);
  const bool decode = c.sweep.regime == model::Regime::decode;
  const double runs = double(model::prompt_cells(c.sweep));
  const double prefills = (c.sweep.has_dense() || decode ? 1 : 0) + (decode ? 0 : runs - (c.sweep.has_dense() ? 1 : 0));
  for (const RulerGroup& g : ruler_groups(c)) {
    const uint32_t group = uint32_t(cells.group_costs.size());
    auto key = [&](const std::string& method, uint32_t budget) {
      return nlohmann::json{{"task", g.name()}, {"length", g.length}, {"method", method}, {"budget", budget},
                            {"regime", method == "dense" ? "dense" : regime}};
    };
    if (c.sweep.has_dense()) cells.add(key("dense", 0), group);
    for (const std::string& m : c.sweep.selection_methods())
      for (uint32_t budget : c.sweep.budgets) cells.add(key(m, budget), group);
    // Prefills grow with the length and its square; each decode step reads the cache.
    double L = g.length;
    if (g.file && L == 0)  // no `length` fields: about 4 bytes a token
      for (const RulerRecord& r : g.file->records) L = std::max(L, double(r.input.size()) / 4);
    cells.group_costs.push_back(g.samples(c) * (prefills * L * (1 + L / 32768) + runs * g.generate(c) * L / 256));
  }
  return cells;
}

nlohmann::json ruler_settings_json(const RulerConfig& c) {
  nlohmann::json settings = {{"tasks", c.tasks},
                             {"chunk", c.chunk},
                             {"max_generate", c.max_generate},
                             {"regime", model::regime_name(c.sweep.regime)},
                             {"prefill_budget", c.sweep.prefill_budget},
                             {"options", model::method_options_json(c.sweep.methods, c.sweep.options)},
                             {"dense_layers", c.sweep.dense_layers}};
  if (c.files.empty()) {
    settings.update({{"lengths", c.lengths}, {"samples", c.samples}, {"seed", c.seed}, {"words", c.texts.words.size()}});
    return settings;
  }
  // A resumed sweep must read the same files: each one's records and a hash of its bytes.
  nlohmann::json files = nlohmann::json::array();
  for (const RulerTaskFile& f : c.files) {
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(f.fnv1a));
    files.push_back({{"task", f.task}, {"records", f.records.size()}, {"fnv1a", hash}, {"tokens_to_generate", f.tokens_to_generate},
                     {"metric", metric_name(f.metric)}});
  }
  settings.update({{"data", c.data_dir}, {"files", files}});
  return settings;
}

nlohmann::json ruler_result_json(const RulerResult& r) {
  nlohmann::json j = {{"task", r.task},       {"length", r.length},           {"method", r.method},
          {"budget", r.budget},   {"regime", model::plan_regime_name(r.plan)},
          {"plan", model::plan_json(r.plan)},
          {"score", r.score()},   {"samples", r.samples},         {"predictions", r.predictions},
          {"references", r.references}};
  if (!r.indices.empty()) j["indices"] = r.indices;
  return j;
}

std::vector<RulerResult> run_ruler(const vk::Device& device, const model::Checkpoint& checkpoint,
                                   const model::Tokenizer& tokenizer, const RulerConfig& c, const RulerProgress& progress,
                                   const sweep::CellHooks<RulerResult>& hooks) {
  const bool from_files = !c.files.empty();
  if (c.tasks.empty()) throw InputError("no task", "tasks");
  model::require_text_tokenizer(tokenizer, "ruler");
  model::check_sweep(c.sweep);
  if (!from_files) {
    if (c.lengths.empty()) throw InputError("no length", "lengths");
    if (c.samples == 0) throw InputError("no sample", "samples");
    for (const std::string& name : c.tasks) find_task(name);
    model::check_sequence_length(checkpoint.config(), *std::max_element(c.lengths.begin(), c.lengths.end()));
    for (const RulerGroup& g : ruler_groups(c)) check_length(*g.task, tokenizer, checkpoint.config(), c.texts, g.length);
  }

  size_t wanted_cells = 0;
  const std::vector<RulerGroup> groups = model::groups_with_wanted_cells(
      ruler_groups(c), model::prompt_cells(c.sweep), [&](size_t cell) { return hooks.want(cell); }, wanted_cells);
  if (groups.empty()) return {};
  uint32_t longest = 0;
  for (const RulerGroup& g : groups) {
    if (!g.file) {
      longest = std::max(longest, g.length);
      continue;
    }
    // Each record's prompt and answer within the model's context (tokenized
    // again when it runs: holding a long file's tokens would take gigabytes).
    for (const RulerRecord& r : g.file->records) {
      const size_t prompt = record_tokens(tokenizer, checkpoint.config(), r).size();
      const std::string where = g.file->path + " line " + std::to_string(r.line) + ": ";
      if (prompt == 0) throw InputError(where + "an empty prompt", "data");
      try {
        model::check_sequence_length(checkpoint.config(), prompt + g.generate(c));
      } catch (const InputError& e) {
        throw InputError(where + "its prompt of " + std::to_string(prompt) + " tokens and " + std::to_string(g.generate(c)) +
                             " to generate: " + e.what(),
                         "data");
      }
      longest = std::max(longest, uint32_t(prompt + g.generate(c)));
    }
  }
  size_t runs = 0;  // each wanted cell's samples (wanted_cells * samples without files)
  for (const RulerGroup& g : groups)
    for (size_t cell = g.first_cell; cell < g.first_cell + model::prompt_cells(c.sweep); ++cell)
      runs += hooks.want(cell) ? g.samples(c) : 0;
  std::map<size_t, RulerResult> cells;  // by cell: the sweep's order
  model::Model model(device, checkpoint, longest, c.chunk);
  size_t done = 0;
  for (const RulerGroup& g : groups) {
    const uint32_t samples = g.samples(c), steps = g.generate(c);
    const RulerMetric metric = g.file ? g.file->metric : RulerMetric::string_match_all;
    for (uint32_t sample = 0; sample < samples; ++sample) {
      std::vector<int32_t> tokens;
      std::vector<std::string> outputs;
      if (g.file) {
        const RulerRecord& r = g.file->records[sample];
        tokens = record_tokens(tokenizer, checkpoint.config(), r);
        outputs = r.outputs;
      } else {
        RulerPrompt prompt = ruler_prompt(*g.task, tokenizer, checkpoint.config(), c.texts, g.length, c.seed, sample);
        tokens = std::move(prompt.tokens);
        outputs = std::move(prompt.outputs);
      }
      // Generation stops early once the score is 1: a longer answer cannot change it.
      auto answer = [&](int32_t first) {
        return model::greedy_answer(model, tokenizer, tokens.back(), first, steps,
                                    [&](const std::string& text) { return ruler_score(metric, text, outputs) == 1.0; });
      };
      model::run_prompt_cells(
          model, c.sweep, tokens, g.first_cell, [&](size_t cell) { return hooks.want(cell); }, answer,
          [&](const model::PromptRun& run, const std::string& said) {
            auto it = cells.find(run.cell);
            if (it == cells.end())
              it = cells.emplace(run.cell, RulerResult{g.name(), g.length, run.method, run.budget, run.plan}).first;
            RulerResult& r = it->second;
            r.matched += ruler_score(metric, said, outputs);
            r.samples += 1;
            r.predictions.push_back(said);
            r.references.push_back(outputs);
            if (g.file) r.indices.push_back(g.file->records[sample].index);
            if (r.samples == samples && hooks.done) hooks.done(run.cell, r);
            if (progress) progress(++done, runs);
          });
    }
  }
  std::vector<RulerResult> all;
  for (auto& [cell, r] : cells) all.push_back(std::move(r));
  return all;
}

}  // namespace kv::ruler
