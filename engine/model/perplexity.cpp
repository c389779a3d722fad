#include "model/perplexity.h"

#include <algorithm>
#include <cmath>

#include "error.h"
#include "model/model.h"

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

std::vector<PerplexityResult> run_perplexity(const vk::Device& device, const Checkpoint& checkpoint,
                                             const std::vector<int32_t>& tokens, const PerplexityConfig& c,
                                             const std::function<void(size_t, size_t)>& progress) {
  const ModelConfig& config = checkpoint.config();
  const uint32_t T = uint32_t(tokens.size());
  if (c.scored == 0 || c.scored + 1 >= T)
    throw InputError("ppl: " + std::to_string(c.scored) + " scored tokens need a text longer than " + std::to_string(T) + " tokens");
  const MethodSweep sweep = split_method_sweep(c.methods, "ppl");
  const std::vector<std::string>& methods = sweep.methods;
  const bool with_dense = sweep.dense;
  if (!methods.empty() && c.budgets.empty()) throw InputError("ppl: methods other than dense need --budgets");
  check_sequence_length(config, T);
  Model model(device, checkpoint, T, c.chunk);
  const uint32_t first_scored = T - 1 - c.scored;  // the position whose logits score the first scored token

  // Decode: a dense prefill up to first_scored, then one step a token.
  auto decode_run = [&](const SelectionPlan& plan) {
    model.select({});
    model.rewind(0);
    model.prefill(std::span(tokens).first(first_scored));
    model.select(plan);
    double total = 0;
    for (uint32_t p = first_scored; p + 1 < T; ++p) {
      model.append(std::span(tokens).subspan(p, 1));
      total += nll(model.logits().data(), config.vocab, tokens[p + 1]);
    }
    return total / c.scored;
  };
  // Prefill: every chunk through the plan, every position's logits kept.
  auto prefill_run = [&](const SelectionPlan& plan) {
    model.select(plan);
    model.rewind(0);
    double total = 0;
    uint32_t before = 0;  // positions done before this chunk
    model.prefill(tokens, true, [&](uint32_t done) {
      const std::vector<float> logits = model.logits();
      for (uint32_t p = std::max(before, first_scored); p < done && p + 1 < T; ++p)
        total += nll(logits.data() + size_t(p - before) * config.vocab, config.vocab, tokens[p + 1]);
      before = done;
    });
    return total / c.scored;
  };

  std::vector<PerplexityResult> results;
  const size_t runs = (with_dense ? 2 : 0) + methods.size() * c.budgets.size() * ((c.decode ? 1 : 0) + (c.prefill ? 1 : 0));
  size_t done = 0;
  auto add = [&](const std::string& method, uint32_t budget, const char* regime, double mean) {
    results.push_back({method, budget, regime, mean, c.scored});
    if (progress) progress(++done, runs);
  };
  if (with_dense) {
    add("dense", 0, "decode", decode_run({}));
    add("dense", 0, "prefill", prefill_run({}));
  }
  for (const std::string& m : methods)
    for (uint32_t budget : c.budgets) {
      SelectionPlan plan;
      plan.options = c.options;
      plan.dense_layers = c.dense_layers;
      if (c.decode) {
        plan.decode_method = m;
        plan.decode_budget = budget;
        add(m, budget, "decode", decode_run(plan));
        plan.decode_method.clear();
        plan.decode_budget = 0;
      }
      if (c.prefill) {
        plan.prefill_method = m;
        plan.prefill_budget = budget;
        add(m, budget, "prefill", prefill_run(plan));
      }
    }
  return results;
}

}  // namespace kv::model
