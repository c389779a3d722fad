#include "model/needle.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <tuple>

#include "error.h"
#include "model/model.h"
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

// The answer generated greedily from `first` (the choice after the prompt):
// as many tokens as the expected answer has, or fewer at an end of sequence.
std::string generate_answer(Model& model, const Tokenizer& tokenizer, const ModelConfig& config, int32_t previous,
                            int32_t first, uint32_t steps) {
  std::string text;
  int32_t next = first;
  for (uint32_t s = 0; s < steps; ++s) {
    if (std::find(config.eos_tokens.begin(), config.eos_tokens.end(), next) != config.eos_tokens.end()) break;
    text += tokenizer.decode(previous, next);
    if (s + 1 == steps) break;
    model.append(std::span(&next, 1));
    previous = next;
    next = model.greedy();
  }
  return text;
}

}  // namespace

RetrievalPrompt needle_sample_prompt(const NeedleConfig& c, const Tokenizer& tokenizer, uint32_t length, double depth,
                                     uint32_t sample) {
  if (length <= 2 * kAnswerRoom)
    throw InputError("needle: a length of " + std::to_string(length) + " tokens leaves no room for a prompt");
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

const char* needle_regime_name(NeedleRegime regime) {
  return regime == NeedleRegime::decode ? "decode" : regime == NeedleRegime::prefill ? "prefill" : "both";
}

std::vector<NeedleResult> run_needle(const vk::Device& device, const Checkpoint& checkpoint, const Tokenizer& tokenizer,
                                     const NeedleConfig& c, const NeedleProgress& progress) {
  if (c.lengths.empty() || c.depths.empty() || c.methods.empty() || c.samples == 0)
    throw InputError("needle: give at least one length, depth, method and sample");
  if (c.task == NeedleTask::kv && c.haystack.empty()) throw InputError("needle: the kv task needs a haystack text");
  const MethodSweep sweep = split_method_sweep(c.methods, "needle");
  const std::vector<std::string>& methods = sweep.methods;
  const bool with_dense = sweep.dense;
  if (!methods.empty() && (c.budgets.empty() || c.regimes.empty()))
    throw InputError("needle: methods other than dense need --budgets and a regime");
  const ModelConfig& config = checkpoint.config();
  const uint32_t longest = *std::max_element(c.lengths.begin(), c.lengths.end());
  check_sequence_length(config, longest);
  Model model(device, checkpoint, longest, c.chunk);

  // Cells in a fixed order: dense first, then method x budget x regime.
  std::vector<NeedleResult> results;
  std::map<std::tuple<uint32_t, double, std::string, uint32_t, NeedleRegime>, size_t> cell_of;
  auto cell = [&](uint32_t length, double depth, const std::string& method, uint32_t budget, NeedleRegime regime) -> NeedleResult& {
    const auto key = std::make_tuple(length, depth, method, budget, regime);
    auto it = cell_of.find(key);
    if (it == cell_of.end()) {
      it = cell_of.emplace(key, results.size()).first;
      results.push_back({length, depth, method, budget, regime});
    }
    return results[it->second];
  };
  auto plan_for = [&](const std::string& method, uint32_t budget, NeedleRegime regime) {
    SelectionPlan plan;
    plan.options = c.options;
    plan.dense_layers = c.dense_layers;
    if (regime != NeedleRegime::prefill) {
      plan.decode_method = method;
      plan.decode_budget = budget;
    }
    if (regime != NeedleRegime::decode) {
      plan.prefill_method = method;
      plan.prefill_budget = regime == NeedleRegime::both && c.prefill_budget ? c.prefill_budget : budget;
    }
    return plan;
  };

  const size_t runs_per_prompt = (with_dense ? 1 : 0) + methods.size() * c.budgets.size() * c.regimes.size();
  const size_t total_runs = c.lengths.size() * c.depths.size() * c.samples * runs_per_prompt;
  size_t runs_done = 0;
  auto record = [&](NeedleResult& r, const Prompt& prompt, const std::string& said) {
    r.samples += 1;
    r.correct += said.compare(0, prompt.answer.size(), prompt.answer) == 0 ? 1 : 0;
    r.answers.push_back(said);
    if (progress) progress(++runs_done, total_runs);
  };
  for (uint32_t length : c.lengths)
    for (double depth : c.depths)
      for (uint32_t sample = 0; sample < c.samples; ++sample) {
        const Prompt prompt = tokenized(needle_sample_prompt(c, tokenizer, length, depth, sample), tokenizer, config);
        const uint32_t prompt_length = uint32_t(prompt.tokens.size()), steps = uint32_t(tokenizer.encode(prompt.answer).size());
        if (prompt_length + steps > length)
          throw InputError("needle: the answer does not fit in " + std::to_string(length) + " tokens");

        // A dense prefill serves dense and every decode-regime method: each
        // rewinds to the prompt's end and decodes from the same first token.
        const bool decode_regime = std::count(c.regimes.begin(), c.regimes.end(), NeedleRegime::decode) > 0;
        if (with_dense || (decode_regime && !methods.empty())) {
          model.select({});
          model.rewind(0);
          model.prefill(prompt.tokens);
          const int32_t first = model.greedy();
          if (with_dense)
            record(cell(length, depth, "dense", 0, NeedleRegime::decode), prompt,
                   generate_answer(model, tokenizer, config, prompt.tokens.back(), first, steps));
          if (decode_regime)
            for (const std::string& m : methods)
              for (uint32_t budget : c.budgets) {
                model.rewind(prompt_length);
                model.select(plan_for(m, budget, NeedleRegime::decode));
                record(cell(length, depth, m, budget, NeedleRegime::decode), prompt,
                       generate_answer(model, tokenizer, config, prompt.tokens.back(), first, steps));
              }
        }
        for (NeedleRegime regime : c.regimes) {
          if (regime == NeedleRegime::decode) continue;
          for (const std::string& m : methods)
            for (uint32_t budget : c.budgets) {
              model.select(plan_for(m, budget, regime));
              model.rewind(0);
              model.prefill(prompt.tokens);
              record(cell(length, depth, m, budget, regime), prompt,
                     generate_answer(model, tokenizer, config, prompt.tokens.back(), model.greedy(), steps));
            }
        }
      }
  return results;
}

}  // namespace kv::model
