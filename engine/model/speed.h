#pragma once
// End-to-end speed with a selection method inside the model, as the papers
// time it, every run in one process on the same prompt. decode: one dense
// prefill, then dense and each method and budget decode the same greedy
// continuation from the prompt's end. prefill: the prompt's time to first
// token with each method in the prefill chunks. Rounds interleave the runs,
// so that a machine's drift (another process, a clock) falls on every run
// alike and the ratios stay honest.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "model/model.h"
#include "model/selection_plan.h"

namespace kv::model {

struct SpeedConfig {
  MethodSweep sweep;    // regime decode or prefill
  uint32_t steps = 16;  // decode: steps timed a run, after one that is not; prefill: dense steps after, untimed
  uint32_t rounds = 2;
  uint32_t chunk = 0;   // prefill: tokens a chunk, at most the model's chunk (0: the model's)
  // Method options to run each method with, beside the sweep's budgets (a
  // method runs once for each variant that differs in an option it reads):
  // Quest and Fier per query head and per KV head in one table. Empty: the
  // sweep's options alone.
  std::vector<MethodOptions> variants;
};

struct SpeedResult {
  std::string method;
  std::string variant;  // the options this run's method differs in from its other runs ("gqa-agg=max"); empty if none
  uint32_t budget = 0;  // 0 for dense
  SelectionPlan plan;
  // One a round. decode: wall ms a step, each token chosen on the GPU and
  // read there by the next step (Model::append_greedy), no timestamps
  // between dispatches (gpu_ms and stage_ms come from the same steps run
  // with them); the first step is left out, as it also brings the method's metadata
  // (Quest's pages, Fier's bits) over the whole prompt, which the papers build
  // during prefill. prefill: wall ms from the prompt to its first token.
  std::vector<double> ms_by_round;
  double first_step_ms = 0;                 // decode: the step left out, mean over rounds
  std::map<std::string, double> gpu_ms;     // by part (Model::ms_by_part): a timed step's (decode), a prefill's (prefill)
  std::map<std::string, double> stage_ms;   // the same by stage (the linear layers' qkv, mlp_up, ... among them)
  std::vector<int32_t> continuation;        // the tokens chosen after the prompt (round 0)
  double median_ms() const;
};

struct SpeedRun {
  uint32_t prompt_tokens = 0;
  double prefill_ms = 0;  // decode: the dense prefill, to the first token
  std::vector<SpeedResult> results;  // dense first, then method x budget
};

// The runs of a table in the order it reports them, not yet timed: dense
// first, then each method's variants and budgets.
std::vector<SpeedResult> speed_runs(const SpeedConfig& config);

// On `model` (its chunk the prefill's), which must hold the prompt plus the
// steps and one more: one model serves both regimes' sweeps. Only the runs
// `wanted` keeps (an index into speed_runs; unset: all) are timed and
// reported, in order.
SpeedRun run_speed(Model& model, const std::vector<int32_t>& prompt, const SpeedConfig& config,
                   const std::function<void(size_t done, size_t total)>& progress = {},
                   const std::function<bool(size_t run)>& wanted = {});

}  // namespace kv::model
