#pragma once
// Perplexity of a text with a selection method inside the model: the decode
// path teacher-forced token by token (as Fier's PG19 evaluation), or the
// prefill path chunk by chunk (each chunk's attention through the method).
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/selection_plan.h"
#include "model/tokenizer.h"
#include "sweep/results.h"
#include "vk/device.h"

namespace kv::model {

struct PerplexityConfig {
  uint32_t scored = 512;  // the text's last `scored` predictions are scored
  // Regime::both scores the decode path and the prefill path, each on its own.
  MethodSweep sweep;
  uint32_t chunk = 128;
};

struct PerplexityResult {
  std::string method;
  uint32_t budget = 0;          // 0 for dense
  Regime regime = Regime::decode;  // the path scored (dense: both, as a check of each other)
  SelectionPlan plan;
  double mean_nll = 0;          // nats per scored token
  uint32_t scored = 0;
  double perplexity() const;
};

// `tokens` (with its BOS) through the model: in the decode regime a dense
// prefill of all but the last `scored` tokens, then each of those as a decode
// step with the method, its logits scoring the next token; in the prefill
// regime every chunk with the method, the logits of the same positions
// scoring the same tokens. Dense runs both ways. Only the cells `cells`
// wants (indices into perplexity_cells) run, each handed to cells.done as it
// finishes; they come back in the sweep's order.
std::vector<PerplexityResult> run_perplexity(const vk::Device& device, const Checkpoint& checkpoint,
                                             const std::vector<int32_t>& tokens, const PerplexityConfig& config,
                                             const std::function<void(size_t, size_t)>& progress = {},
                                             const sweep::CellHooks<PerplexityResult>& cells = {});

// The sweep's cells in the order run_perplexity reports them, keyed by
// method, budget and the path scored; each its own group.
sweep::SweepCells perplexity_cells(const PerplexityConfig& config);

// The first `length` tokens of `text` (with the model's BOS), as perplexity
// scores them; InputError for a tokenizer of token ids, and (setting
// "length") for a text, named `source`, that holds fewer tokens.
std::vector<int32_t> perplexity_tokens(const Tokenizer& tokenizer, const ModelConfig& model, const std::string& text,
                                       uint32_t length, const std::string& source);

// The results as `kvscope ppl --json` holds them (docs/cli.md): one object
// each under "results" (perplexity_result_json), beside the sweep's settings
// (perplexity_settings_json).
nlohmann::json perplexity_json(const PerplexityConfig& config, const std::vector<PerplexityResult>& results);
nlohmann::json perplexity_settings_json(const PerplexityConfig& config);
nlohmann::json perplexity_result_json(const PerplexityResult& result);

}  // namespace kv::model
