#include "model/speed.h"

#include <algorithm>
#include <chrono>

#include "base/error.h"
#include "base/median.h"
#include "methods/table.h"
#include "model/model.h"

namespace kv::model {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

// GPU ms so far by stage name, whatever part recorded it.
std::map<std::string, double> stage_ms(const Model& model) {
  std::map<std::string, double> stages;
  for (const vk::StageTime& t : model.stage_times()) stages[t.stage] += t.milliseconds;
  return stages;
}

// The runs of one method: a plan for each distinct variant (by the options
// the method reads) and budget, labelled by the options in which its
// variants differ.
std::vector<SpeedResult> method_runs(const SpeedConfig& c, const std::string& method) {
  std::vector<MethodOptions> variants;
  std::vector<std::string> seen;
  for (const MethodOptions& options : c.variants.empty() ? std::vector<MethodOptions>{c.sweep.options} : c.variants) {
    const std::string key = method_options_json({method}, options).dump();
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    variants.push_back(options);
  }
  std::vector<SpeedResult> runs;
  for (const MethodOptions& options : variants) {
    std::string label;
    for (const char* flag : find_method(method).options) {
      const OptionSpec& option = find_option(flag);
      bool differs = false;
      for (const MethodOptions& other : variants) differs |= option.text(other) != option.text(options);
      if (!differs) continue;
      if (!label.empty()) label += ',';
      label.append(flag).append("=").append(option.text(options));
    }
    MethodSweep sweep = c.sweep;
    sweep.options = options;
    for (uint32_t budget : c.sweep.budgets) runs.push_back({method, label, budget, plan_for(sweep, method, budget)});
  }
  return runs;
}

}  // namespace

double SpeedResult::median_ms() const { return median(ms_by_round); }

std::vector<SpeedResult> speed_runs(const SpeedConfig& c) {
  std::vector<SpeedResult> runs;
  if (c.sweep.has_dense()) runs.push_back({"dense"});
  for (const std::string& m : c.sweep.selection_methods())
    for (SpeedResult& r : method_runs(c, m)) runs.push_back(std::move(r));
  return runs;
}

SpeedRun run_speed(Model& model, const std::vector<int32_t>& prompt, const SpeedConfig& c,
                   const std::function<void(size_t, size_t)>& progress, const std::function<bool(size_t)>& wanted) {
  if (prompt.empty()) throw InputError("the prompt is empty", "prompt");
  if (c.steps == 0) throw InputError("no step to time", "steps");
  if (c.rounds == 0) throw InputError("no round to time", "rounds");
  if (c.sweep.regime == Regime::both) throw InputError("speed times the decode or the prefill regime, one at a time", "regime");
  check_sweep(c.sweep);
  const uint32_t prompt_length = uint32_t(prompt.size());
  if (uint64_t(prompt_length) + c.steps + 1 > model.capacity())
    throw InputError("the model holds " + std::to_string(model.capacity()) + " positions, not the prompt's " +
                     std::to_string(prompt_length) + " and " + std::to_string(c.steps + 1) + " steps");

  SpeedRun run;
  run.prompt_tokens = prompt_length;
  std::vector<SpeedResult> runs = speed_runs(c);
  for (size_t i = 0; i < runs.size(); ++i)
    if (!wanted || wanted(i)) run.results.push_back(std::move(runs[i]));
  if (run.results.empty()) return run;
  const bool decode = c.sweep.regime == Regime::decode;
  const size_t total = (decode ? 1 : 0) + run.results.size() * c.rounds;
  size_t done = 0;

  int32_t first = 0;  // decode: the token the dense prefill chose
  if (decode) {
    const Clock::time_point start = Clock::now();
    model.prefill(prompt);
    first = model.greedy();
    run.prefill_ms = ms_since(start);
    if (progress) progress(++done, total);
  }
  for (uint32_t round = 0; round < c.rounds; ++round)
    for (size_t i = 0; i < run.results.size(); ++i) {
      SpeedResult& result = run.results[i];
      std::vector<int32_t> chosen;
      // Steps as a generating user runs them: each token chosen on the GPU
      // and read there by the next step (Model::append_greedy).
      auto steps = [&](uint32_t count) {
        const std::vector<int32_t> more = model.append_greedy(chosen.back(), count);
        chosen.insert(chosen.end(), more.begin(), more.end());
      };
      model.select(result.plan);
      std::map<std::string, double> before, stages_before;
      if (decode) {
        model.rewind(prompt_length);
        chosen.push_back(first);
        const Clock::time_point first_step = Clock::now();
        steps(1);
        result.first_step_ms += ms_since(first_step) / c.rounds;
        // GPU time by stage from the steps with a timestamp after every
        // dispatch, wall time from the same steps again without them.
        before = model.ms_by_part();
        stages_before = stage_ms(model);
        steps(c.steps);
        model.rewind(prompt_length + 1);
        model.time_stages(false);
        const Clock::time_point timed = Clock::now();
        const std::vector<int32_t> again = model.append_greedy(chosen[1], c.steps);
        result.ms_by_round.push_back(ms_since(timed) / c.steps);
        model.time_stages(true);
        if (!std::equal(again.begin(), again.end(), chosen.begin() + 2))
          throw DeviceError("speed: the same steps chose different tokens when run again");
      } else {
        model.rewind(0);
        before = model.ms_by_part();
        stages_before = stage_ms(model);
        const Clock::time_point start = Clock::now();
        model.prefill(prompt, false, {}, c.chunk);
        chosen.push_back(model.greedy());
        result.ms_by_round.push_back(ms_since(start));
      }
      const double timed_units = decode ? double(c.steps) * c.rounds : c.rounds;
      for (const auto& [part, ms] : model.ms_by_part()) result.gpu_ms[part] += (ms - before.at(part)) / timed_units;
      for (const auto& [stage, ms] : stage_ms(model)) result.stage_ms[stage] += (ms - stages_before[stage]) / timed_units;
      if (round == 0) {
        if (!decode) steps(c.steps);  // the answer, densely
        result.continuation = chosen;
      }
      if (progress) progress(++done, total);
    }
  return run;
}

}  // namespace kv::model
