#pragma once
// Decode speed with a selection method inside the model, as the papers time
// it: one dense prefill of a prompt, then, for dense and each method and
// budget, the same greedy continuation decoded from the prompt's end. Rounds
// interleave the runs, so that a machine's drift (another process, a clock)
// falls on every run alike and the ratios stay honest.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "method.h"
#include "model/checkpoint.h"
#include "vk/device.h"

namespace kv::model {

struct DecodeSpeedConfig {
  std::vector<std::string> methods;  // "dense" and rows of method_table()
  std::vector<uint32_t> budgets;
  MethodOptions options;
  std::vector<uint32_t> dense_layers;
  uint32_t steps = 16;  // decode steps timed a run, after one that is not
  uint32_t rounds = 2;
  uint32_t chunk = 128;
};

struct DecodeSpeedResult {
  std::string method;
  uint32_t budget = 0;  // 0 for dense
  // Wall ms a decode step, the token chosen on the GPU and read back, one a
  // round. The first step is left out: it also brings the method's metadata
  // (Quest's pages, Fier's bits) over the whole prompt, which the papers
  // build during prefill.
  std::vector<double> ms_per_token;
  double first_step_ms = 0;                       // the step left out, mean over rounds
  std::map<std::string, double> gpu_ms_per_token;  // by Model::stage_part, over the timed steps
  std::vector<int32_t> continuation;               // the tokens chosen, from the prompt's own
  double mean_ms_per_token() const;
};

struct DecodeSpeedRun {
  uint32_t prompt_tokens = 0;
  double prefill_ms = 0;  // the dense prefill, to the first token
  std::vector<DecodeSpeedResult> results;  // dense first, then method x budget
};

DecodeSpeedRun run_decode_speed(const vk::Device& device, const Checkpoint& checkpoint, const std::vector<int32_t>& prompt,
                                const DecodeSpeedConfig& config,
                                const std::function<void(size_t done, size_t total)>& progress = {});

}  // namespace kv::model
