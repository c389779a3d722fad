#include "model/perplexity.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "base/error.h"
#include "model/model.h"
#include "model/prompts.h"

namespace kv::model {
namespace {

// -log softmax(logits)[target], in double.
double nll(const float* logits, uint32_t vocab, int32_t target) {
  const double largest = *std::max_element(logits, logits + vocab);
  double total = 0;
  for (uint32_t i = 0; i < vocab; ++i) total += std::exp(double(logits[i]) - largest);
  return std::log(total) + largest - double(logits[target]);
}

}  // namespace

double PerplexityResult::perplexity() const { return std::exp(mean_nll); }

namespace {

// The model over one text, scored on its last predictions along either path.
class ScoredText {
 public:
  ScoredText(Model& model, const std::vector<int32_t>& tokens, uint32_t scored)
      : model_(model), tokens_(tokens), scored_(scored), first_scored_(uint32_t(tokens.size()) - 1 - scored) {}

  // Decode: a dense prefill up to the first scored position, then one step a
  // token with `plan`.
  double decode_nll(const SelectionPlan& plan) {
    const uint32_t T = uint32_t(tokens_.size()), vocab = model_.config().vocab;
    model_.select({});
    model_.rewind(0);
    model_.prefill(std::span(tokens_).first(first_scored_));
    model_.select(plan);
    double total = 0;
    for (uint32_t p = first_scored_; p + 1 < T; ++p) {
      model_.append(std::span(tokens_).subspan(p, 1));
      total += nll(model_.logits().data(), vocab, tokens_[p + 1]);
    }
    return total / scored_;
  }

  // Prefill: every chunk through `plan`, every position's logits kept.
  double prefill_nll(const SelectionPlan& plan) {
    const uint32_t T = uint32_t(tokens_.size()), vocab = model_.config().vocab;
    model_.select(plan);
    model_.rewind(0);
    double total = 0;
    uint32_t before = 0;  // positions done before this chunk
    model_.prefill(tokens_, true, [&](uint32_t done) {
      const std::vector<float> logits = model_.logits();
      for (uint32_t p = std::max(before, first_scored_); p < done && p + 1 < T; ++p)
        total += nll(logits.data() + size_t(p - before) * vocab, vocab, tokens_[p + 1]);
      before = done;
    });
    return total / scored_;
  }

  double nll_of(Regime path, const SelectionPlan& plan) { return path == Regime::decode ? decode_nll(plan) : prefill_nll(plan); }

 private:
  Model& model_;
  const std::vector<int32_t>& tokens_;
  uint32_t scored_, first_scored_;  // first_scored_: the position whose logits score the first scored token
};

}  // namespace

namespace {

// The runs of a sweep in its order: dense both ways, then each method and
// budget on each path the regime asks.
std::vector<std::tuple<std::string, uint32_t, Regime>> perplexity_runs(const PerplexityConfig& c) {
  std::vector<Regime> paths;
  if (c.sweep.regime != Regime::prefill) paths.push_back(Regime::decode);
  if (c.sweep.regime != Regime::decode) paths.push_back(Regime::prefill);
  std::vector<std::tuple<std::string, uint32_t, Regime>> runs;
  if (c.sweep.has_dense())
    for (Regime path : {Regime::decode, Regime::prefill}) runs.emplace_back("dense", 0, path);
  for (const std::string& m : c.sweep.selection_methods())
    for (uint32_t budget : c.sweep.budgets)
      for (Regime path : paths) runs.emplace_back(m, budget, path);
  return runs;
}

}  // namespace

sweep::SweepCells perplexity_cells(const PerplexityConfig& c) {
  sweep::SweepCells cells;
  for (const auto& [method, budget, path] : perplexity_runs(c)) {
    cells.add({{"method", method}, {"budget", budget}, {"regime", regime_name(path)}}, uint32_t(cells.group_costs.size()));
    cells.group_costs.push_back(1);
  }
  return cells;
}

std::vector<PerplexityResult> run_perplexity(const vk::Device& device, const Checkpoint& checkpoint,
                                             const std::vector<int32_t>& tokens, const PerplexityConfig& c,
                                             const std::function<void(size_t, size_t)>& progress,
                                             const sweep::CellHooks<PerplexityResult>& hooks) {
  const uint32_t T = uint32_t(tokens.size());
  if (c.scored == 0 || c.scored + 1 >= T)
    throw InputError(std::to_string(c.scored) + " scored tokens need a text longer than " + std::to_string(T) + " tokens", "scored");
  check_sweep(c.sweep);
  check_sequence_length(checkpoint.config(), T);
  const auto runs = perplexity_runs(c);
  std::vector<size_t> wanted;
  for (size_t cell = 0; cell < runs.size(); ++cell)
    if (hooks.want(cell)) wanted.push_back(cell);
  std::vector<PerplexityResult> results;
  if (wanted.empty()) return results;
  Model model(device, checkpoint, T, c.chunk);
  ScoredText text(model, tokens, c.scored);
  for (size_t cell : wanted) {
    const auto& [method, budget, path] = runs[cell];
    const SelectionPlan plan = plan_for(c.sweep, method, budget, path);
    results.push_back({method, budget, path, plan, text.nll_of(path, plan), c.scored});
    if (hooks.done) hooks.done(cell, results.back());
    if (progress) progress(results.size(), wanted.size());
  }
  return results;
}

std::vector<int32_t> perplexity_tokens(const Tokenizer& tokenizer, const ModelConfig& model, const std::string& text,
                                       uint32_t length, const std::string& source) {
  require_text_tokenizer(tokenizer, "perplexity");
  std::vector<int32_t> tokens = prompt_tokens(tokenizer, model, text);
  if (tokens.size() < length)
    throw InputError(source + " holds " + std::to_string(tokens.size()) + " tokens, fewer than " + std::to_string(length),
                     "length");
  tokens.resize(length);
  return tokens;
}

nlohmann::json perplexity_settings_json(const PerplexityConfig& config) {
  const MethodSweep& sweep = config.sweep;
  return {{"scored", config.scored}, {"chunk", config.chunk}, {"dense_layers", sweep.dense_layers},
          {"options", method_options_json(sweep.methods, sweep.options)}};
}

nlohmann::json perplexity_result_json(const PerplexityResult& r) {
  return {{"method", r.method}, {"budget", r.budget}, {"regime", regime_name(r.regime)}, {"plan", plan_json(r.plan)},
          {"mean_nll", r.mean_nll}, {"perplexity", r.perplexity()}, {"scored", r.scored}};
}

nlohmann::json perplexity_json(const PerplexityConfig& config, const std::vector<PerplexityResult>& results) {
  nlohmann::json all = nlohmann::json::array();
  for (const PerplexityResult& r : results) all.push_back(perplexity_result_json(r));
  nlohmann::json j = perplexity_settings_json(config);
  j["results"] = all;
  return j;
}

}  // namespace kv::model
