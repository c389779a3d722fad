#include "model/decode_speed.h"

#include <chrono>
#include <numeric>

#include "error.h"
#include "model/model.h"

namespace kv::model {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

std::map<std::string, double> gpu_ms_by_part(const Model& model) {
  std::map<std::string, double> parts{{"model", 0.0}, {"attention", 0.0}, {"selection", 0.0}};
  for (const vk::StageTime& t : model.stage_times()) parts[Model::stage_part(t.stage)] += t.milliseconds;
  return parts;
}

}  // namespace

double DecodeSpeedResult::mean_ms_per_token() const {
  return ms_per_token.empty() ? 0 : std::accumulate(ms_per_token.begin(), ms_per_token.end(), 0.0) / ms_per_token.size();
}

DecodeSpeedRun run_decode_speed(const vk::Device& device, const Checkpoint& checkpoint, const std::vector<int32_t>& prompt,
                                const DecodeSpeedConfig& c, const std::function<void(size_t, size_t)>& progress) {
  if (prompt.empty()) throw InputError("decode-speed: the prompt is empty");
  if (c.steps == 0 || c.rounds == 0) throw InputError("decode-speed: give at least one step and one round");
  const MethodSweep sweep = split_method_sweep(c.methods, "decode-speed");
  if (!sweep.methods.empty() && c.budgets.empty()) throw InputError("decode-speed: methods other than dense need --budgets");
  const uint32_t prompt_length = uint32_t(prompt.size());
  check_sequence_length(checkpoint.config(), uint64_t(prompt_length) + c.steps + 1);
  Model model(device, checkpoint, prompt_length + c.steps + 1, c.chunk);

  DecodeSpeedRun run;
  run.prompt_tokens = prompt_length;
  std::vector<SelectionPlan> plans;
  if (sweep.dense) {
    plans.push_back({});
    run.results.push_back({"dense"});
  }
  for (const std::string& m : sweep.methods)
    for (uint32_t budget : c.budgets) {
      plans.push_back({.decode_method = m, .decode_budget = budget, .options = c.options, .dense_layers = c.dense_layers});
      run.results.push_back({m, budget});
    }
  const size_t total = 1 + plans.size() * c.rounds;
  size_t done = 0;

  const Clock::time_point start = Clock::now();
  model.prefill(prompt);
  const int32_t first = model.greedy();
  run.prefill_ms = ms_since(start);
  if (progress) progress(++done, total);

  for (uint32_t round = 0; round < c.rounds; ++round)
    for (size_t i = 0; i < plans.size(); ++i) {
      DecodeSpeedResult& result = run.results[i];
      model.rewind(prompt_length);
      model.select(plans[i]);
      std::vector<int32_t> chosen{first};
      auto step = [&] {
        model.append(std::span(&chosen.back(), 1));
        chosen.push_back(model.greedy());
      };
      const Clock::time_point first_step = Clock::now();
      step();
      result.first_step_ms += ms_since(first_step) / c.rounds;
      const std::map<std::string, double> before = gpu_ms_by_part(model);
      const Clock::time_point timed = Clock::now();
      for (uint32_t s = 0; s < c.steps; ++s) step();
      result.ms_per_token.push_back(ms_since(timed) / c.steps);
      for (const auto& [part, ms] : gpu_ms_by_part(model))
        result.gpu_ms_per_token[part] += (ms - before.at(part)) / (double(c.steps) * c.rounds);
      if (round == 0) result.continuation = chosen;
      if (progress) progress(++done, total);
    }
  return run;
}

}  // namespace kv::model
