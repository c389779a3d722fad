#pragma once
// Perplexity of a text with a selection method inside the model: the decode
// path teacher-forced token by token (as Fier's PG19 evaluation), or the
// prefill path chunk by chunk (each chunk's attention through the method).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "method.h"
#include "model/checkpoint.h"
#include "vk/device.h"

namespace kv::model {

struct PerplexityConfig {
  uint32_t scored = 512;               // the text's last `scored` predictions are scored
  std::vector<std::string> methods;    // "dense" and rows of method_table()
  std::vector<uint32_t> budgets;
  bool decode = true, prefill = false;  // the regimes the methods run in
  MethodOptions options;
  std::vector<uint32_t> dense_layers;
  uint32_t chunk = 128;
};

struct PerplexityResult {
  std::string method;
  uint32_t budget = 0;          // 0 for dense
  std::string regime;           // "decode", "prefill" (dense: both, as a check of each other)
  double mean_nll = 0;          // nats per scored token
  uint32_t scored = 0;
  double perplexity() const;
};

// `tokens` (with its BOS) through the model: in the decode regime a dense
// prefill of all but the last `scored` tokens, then each of those as a decode
// step with the method, its logits scoring the next token; in the prefill
// regime every chunk with the method, the logits of the same positions
// scoring the same tokens. Dense runs both ways.
std::vector<PerplexityResult> run_perplexity(const vk::Device& device, const Checkpoint& checkpoint,
                                             const std::vector<int32_t>& tokens, const PerplexityConfig& config,
                                             const std::function<void(size_t, size_t)>& progress = {});

}  // namespace kv::model
