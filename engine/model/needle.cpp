#include "model/needle.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <tuple>

#include "base/error.h"
#include "model/chat.h"
#include "model/model.h"
#include "model/prompt_runs.h"
#include "model/prompts.h"

namespace kv::model {
namespace {

// Positions a prompt leaves for its answer within the length asked.
constexpr uint32_t kAnswerRoom = 16;

// Words for the key-value facts, as the models' training mixed them in.
const char* const kWords[] = {"lantern", "harbor", "violet",  "copper", "meadow", "falcon",
                              "glacier", "orchard", "quartz", "saddle", "thimble", "willow"};

struct Prompt {
  std::vector<int32_t> tokens;
  std::string answer;
};

Prompt tokenized(const RetrievalPrompt& p, const Tokenizer& tokenizer, const ModelConfig& model) {
  return {prompt_tokens(tokenizer, model, p.text), p.answer};
}

}  // namespace

RetrievalPrompt needle_sample_prompt(const NeedlePrompts& c, const Tokenizer& tokenizer, uint32_t length, double depth,
                                     uint32_t sample) {
  if (length <= 2 * kAnswerRoom)
    throw InputError("a length of " + std::to_string(length) + " tokens leaves no room for a prompt", "lengths");
  // Each prompt's key from the seed and its place in the sweep, whatever else is swept.
  std::mt19937 rng(c.seed * 1000003u + length * 7919u + uint32_t(depth * 1000) * 31u + sample);
  if (c.task == NeedleTask::passkey) return passkey_prompt(tokenizer, length - kAnswerRoom, depth, 10000 + rng() % 90000);
  const std::string word = kWords[rng() % std::size(kWords)], number = std::to_string(1000000 + rng() % 9000000);
  RetrievalPrompt p = needle_prompt(tokenizer, c.haystack, "The special magic number for " + word + " is " + number + ".",
                                    "\nWhat is the special magic number for " + word + "? The special magic number for " +
                                        word + " is",
                                    length - kAnswerRoom, depth);
  p.answer = " " + number;
  return p;
}

RetrievalHead find_retrieval_head(const Capture& capture) {
  if (!capture.needle_span()) throw InputError("the capture records no needle (needle_span)");
  const auto [first, end] = *capture.needle_span();
  RetrievalHead best;
  best.needle_mass = -1;
  for (const CaptureLayer& layer : capture.layers()) {
    const AttentionShape& s = layer.shape;
    const uint32_t t = s.tokens - 1, d = s.dim;
    const double scale = capture.scale(layer);
    const std::vector<float> q = to_float(layer.dtype, layer.q->data), k = to_float(layer.dtype, layer.k->data);
    for (uint32_t h = 0; h < s.heads; ++h) {
      const float* query = &q[(size_t(h) * s.tokens + t) * d];
      const float* keys = &k[size_t(h / s.group()) * s.tokens * d];
      std::vector<double> logits(t + 1);
      double largest = -1e300;
      for (uint32_t j = 0; j <= t; ++j) {
        double dot = 0;
        for (uint32_t i = 0; i < d; ++i) dot += double(query[i]) * keys[size_t(j) * d + i];
        largest = std::max(largest, logits[j] = dot * scale);
      }
      double total = 0, needle = 0;
      for (uint32_t j = 0; j <= t; ++j) {
        const double p = std::exp(logits[j] - largest);
        total += p;
        if (j >= first && j < end) needle += p;
      }
      if (needle / total > best.needle_mass) best = {layer.index, h, needle / total};
    }
  }
  return best;
}

const char* needle_task_name(NeedleTask task) { return task == NeedleTask::passkey ? "passkey" : "kv"; }

NeedleTask parse_needle_task(const std::string& text) {
  for (NeedleTask task : {NeedleTask::passkey, NeedleTask::kv})
    if (text == needle_task_name(task)) return task;
  throw InputError("the task is passkey or kv, not '" + text + "'", "task");
}

namespace {

// A (length, depth) of the sweep: its cells are consecutive, dense first
// (if swept), then each method and budget.
struct NeedleGroup {
  uint32_t length = 0;
  double depth = 0;
  size_t first_cell = 0;
};

std::vector<NeedleGroup> needle_groups(const NeedleConfig& c) {
  const size_t per_group = prompt_cells(c.sweep);
  std::vector<NeedleGroup> groups;
  for (uint32_t length : c.prompts.lengths)
    for (double depth : c.prompts.depths) groups.push_back({length, depth, groups.size() * per_group});
  return groups;
}

// The cells of a run, each filled sample by sample and handed on once its
// last sample is in.
class NeedleCells {
 public:
  NeedleCells(uint32_t samples, size_t runs, const NeedleProgress& progress, const sweep::CellHooks<NeedleResult>& hooks)
      : samples_(samples), runs_(runs), progress_(progress), hooks_(hooks) {}

  // Scores what the model said for one sample of `cell` (length, depth, method, budget) under `plan`.
  void add(size_t cell, uint32_t length, double depth, const std::string& method, uint32_t budget,
           const SelectionPlan& plan, const Prompt& prompt, const std::string& said) {
    auto it = cells_.find(cell);
    if (it == cells_.end()) it = cells_.emplace(cell, NeedleResult{length, depth, method, budget, plan}).first;
    NeedleResult& r = it->second;
    r.samples += 1;
    r.correct += said.compare(0, prompt.answer.size(), prompt.answer) == 0 ? 1 : 0;
    r.answers.push_back(said);
    if (r.samples == samples_ && hooks_.done) hooks_.done(cell, r);
    if (progress_) progress_(++done_, runs_);
  }
  std::vector<NeedleResult> take() {
    std::vector<NeedleResult> all;
    for (auto& [cell, r] : cells_) all.push_back(std::move(r));
    return all;
  }

 private:
  uint32_t samples_;
  std::map<size_t, NeedleResult> cells_;  // by cell: the sweep's order
  size_t runs_, done_ = 0;
  const NeedleProgress& progress_;
  const sweep::CellHooks<NeedleResult>& hooks_;
};

// Every run of one prompt of `group` that `hooks` wants: dense and each method and budget.
void run_prompt(Model& model, const Tokenizer& tokenizer, const MethodSweep& sweep, const NeedleGroup& group,
                const Prompt& prompt, const sweep::CellHooks<NeedleResult>& hooks, NeedleCells& cells) {
  const uint32_t steps = uint32_t(unwrapped_tokenizer(tokenizer).encode(prompt.answer).size());
  if (prompt.tokens.size() + steps > group.length)
    throw InputError("the answer does not fit in " + std::to_string(group.length) + " tokens", "lengths");
  run_prompt_cells(
      model, sweep, prompt.tokens, group.first_cell, [&](size_t cell) { return hooks.want(cell); },
      [&](int32_t first) { return greedy_answer(model, tokenizer, prompt.tokens.back(), first, steps); },
      [&](const PromptRun& run, const std::string& said) {
        cells.add(run.cell, group.length, group.depth, run.method, run.budget, run.plan, prompt, said);
      });
}

}  // namespace

nlohmann::json needle_settings_json(const NeedleConfig& c) {
  return {{"task", needle_task_name(c.prompts.task)}, {"seed", c.prompts.seed}, {"samples", c.prompts.samples}, {"chunk", c.chunk},
          {"regime", regime_name(c.sweep.regime)}, {"prefill_budget", c.sweep.prefill_budget},
          {"options", method_options_json(c.sweep.methods, c.sweep.options)}, {"dense_layers", c.sweep.dense_layers}};
}

nlohmann::json needle_result_json(const NeedleConfig& c, const NeedleResult& r) {
  return {{"task", needle_task_name(c.prompts.task)}, {"length", r.length}, {"depth", r.depth}, {"method", r.method},
          {"budget", r.budget}, {"regime", plan_regime_name(r.plan)}, {"plan", plan_json(r.plan)},
          {"accuracy", r.accuracy()}, {"correct", r.correct}, {"samples", r.samples}, {"answers", r.answers}};
}

nlohmann::json needle_json(const NeedleConfig& c, const std::vector<NeedleResult>& results) {
  nlohmann::json all = nlohmann::json::array();
  for (const NeedleResult& r : results) all.push_back(needle_result_json(c, r));
  nlohmann::json j = needle_settings_json(c);
  j["results"] = all;
  return j;
}

std::vector<NeedleResult> needle_results_from_json(const nlohmann::json& j) {
  std::vector<NeedleResult> results;
  try {
    for (const nlohmann::json& c : j.at("results")) {
      NeedleResult& r = results.emplace_back();
      r.length = c.at("length").get<uint32_t>();
      r.depth = c.at("depth").get<double>();
      r.method = c.at("method").get<std::string>();
      r.budget = c.at("budget").get<uint32_t>();
      if (!c.contains("plan")) throw InputError("a result has no plan (written by an older kvscope needle): run it again", "needle");
      r.plan = plan_from_json(c.at("plan"));
      r.correct = c.at("correct").get<uint32_t>();
      r.samples = c.at("samples").get<uint32_t>();
      r.answers = c.value("answers", std::vector<std::string>{});
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("not kvscope needle's JSON: ") + e.what(), "needle");
  }
  return results;
}

sweep::SweepCells needle_cells(const NeedleConfig& c) {
  sweep::SweepCells cells;
  const std::string regime = regime_name(c.sweep.regime);
  const std::vector<std::string> methods = c.sweep.selection_methods();
  const bool decode = c.sweep.regime == Regime::decode;
  // A prefill's cost grows with the length and, through attention, its
  // square; the decode regime prefills a prompt once for every method.
  const double prefills = (c.sweep.has_dense() || decode ? 1 : 0) + (decode ? 0 : double(methods.size() * c.sweep.budgets.size()));
  for (const NeedleGroup& g : needle_groups(c)) {
    const uint32_t group = uint32_t(cells.group_costs.size());
    auto key = [&](const std::string& method, uint32_t budget) {
      return nlohmann::json{{"length", g.length}, {"depth", g.depth}, {"method", method}, {"budget", budget},
                            {"regime", method == "dense" ? "dense" : regime}};
    };
    if (c.sweep.has_dense()) cells.add(key("dense", 0), group);
    for (const std::string& m : methods)
      for (uint32_t budget : c.sweep.budgets) cells.add(key(m, budget), group);
    cells.group_costs.push_back(c.prompts.samples * prefills * g.length * (1 + g.length / 32768.0));
  }
  return cells;
}

std::vector<NeedleResult> run_needle(const vk::Device& device, const Checkpoint& checkpoint, const Tokenizer& tokenizer,
                                     const NeedleConfig& c, const NeedleProgress& progress,
                                     const sweep::CellHooks<NeedleResult>& hooks) {
  const NeedlePrompts& p = c.prompts;
  if (p.lengths.empty()) throw InputError("no prompt length", "lengths");
  if (p.depths.empty()) throw InputError("no needle depth", "depths");
  if (p.samples == 0) throw InputError("no sample", "samples");
  if (p.task == NeedleTask::kv && p.haystack.empty()) throw InputError("the kv task needs a haystack text", "haystack_file");
  require_text_tokenizer(tokenizer, "needle");
  check_sweep(c.sweep);
  check_sequence_length(checkpoint.config(), *std::max_element(p.lengths.begin(), p.lengths.end()));

  size_t wanted_cells = 0;
  const std::vector<NeedleGroup> groups = groups_with_wanted_cells(
      needle_groups(c), prompt_cells(c.sweep), [&](size_t cell) { return hooks.want(cell); }, wanted_cells);
  const size_t runs = wanted_cells * p.samples;
  NeedleCells cells(p.samples, runs, progress, hooks);
  if (groups.empty()) return {};
  uint32_t longest = 0;
  for (const NeedleGroup& g : groups) longest = std::max(longest, g.length);
  Model model(device, checkpoint, longest, c.chunk);
  for (const NeedleGroup& g : groups)
    for (uint32_t sample = 0; sample < p.samples; ++sample)
      run_prompt(model, tokenizer, c.sweep, g,
                 tokenized(needle_sample_prompt(p, tokenizer, g.length, g.depth, sample), tokenizer, model.config()), hooks,
                 cells);
  return cells.take();
}

}  // namespace kv::model
