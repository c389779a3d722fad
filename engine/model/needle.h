#pragma once
// Retrieval accuracy with a selection method inside the model (the seed
// papers' passkey and needle tests): prompts of given lengths with the needle
// at given depths, the model run with each method and budget in the regime
// asked, the answer generated greedily and scored by exact match.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/capture.h"
#include "model/checkpoint.h"
#include "model/prompts.h"
#include "model/selection_plan.h"
#include "model/tokenizer.h"
#include "sweep/results.h"
#include "vk/device.h"

namespace kv::model {

enum class NeedleTask { passkey, kv };
const char* needle_task_name(NeedleTask task);
// InputError (setting "task") for anything but "passkey" and "kv".
NeedleTask parse_needle_task(const std::string& text);

// The prompts: which task, how long, where the needle sits, how many of each.
struct NeedlePrompts {
  NeedleTask task = NeedleTask::passkey;
  std::vector<uint32_t> lengths;  // prompt plus answer, in tokens
  std::vector<double> depths;     // of the needle in the prompt, 0..1
  uint32_t samples = 1;           // prompts per (length, depth), each with its own key
  uint32_t seed = 0;
  std::string haystack;  // kv: the text the fact hides in
};

struct NeedleConfig {
  NeedlePrompts prompts;
  MethodSweep sweep;
  uint32_t chunk = 128;
};

// One cell: a (length, depth, method, budget) of the sweep over the samples,
// with the plan its runs had (dense: the empty plan).
struct NeedleResult {
  uint32_t length = 0;
  double depth = 0;
  std::string method;
  uint32_t budget = 0;  // 0 for dense
  SelectionPlan plan;
  uint32_t correct = 0, samples = 0;
  std::vector<std::string> answers;  // what the model said, per sample
  double accuracy() const { return samples ? double(correct) / samples : 0; }
};

// The prompt of one sample of a (length, depth) cell, as run_needle builds it:
// its answer in `answer`, its needle's characters in needle_first/needle_end.
RetrievalPrompt needle_sample_prompt(const NeedlePrompts& prompts, const Tokenizer& tokenizer, uint32_t length,
                                     double depth, uint32_t sample);

// The head whose dense attention from the capture's last position puts the
// most mass on its needle (needle_span), over every layer the capture holds:
// the retrieval head a needle run depends on.
struct RetrievalHead {
  int layer = 0;
  uint32_t head = 0;
  double needle_mass = 0;
};
RetrievalHead find_retrieval_head(const Capture& capture);

// The results as `kvscope needle --json` holds them (docs/cli.md): one object
// each, with the plan its runs had, under "results", beside the sweep and the
// prompts' settings (needle_settings_json). needle_results_from_json reads
// the cells back (the viewer's re-runs take their plans from there);
// InputError naming what is missing.
nlohmann::json needle_json(const NeedleConfig& config, const std::vector<NeedleResult>& results);
nlohmann::json needle_settings_json(const NeedleConfig& config);
nlohmann::json needle_result_json(const NeedleConfig& config, const NeedleResult& result);
std::vector<NeedleResult> needle_results_from_json(const nlohmann::json& json);

// The sweep's cells in the order run_needle reports them, keyed by length,
// depth, method, budget and regime; a group per (length, depth), whose
// cells share its prompts (and, in the decode regime, their prefills).
sweep::SweepCells needle_cells(const NeedleConfig& config);

// Called after each model run: (runs done, runs in all).
using NeedleProgress = std::function<void(size_t, size_t)>;

// Runs every cell `cells` wants (indices into needle_cells), handing each to
// cells.done as its last sample finishes, and returns them in order. Dense is run once per prompt and reported once. In the
// decode regime one dense prefill serves dense and every method of a prompt
// (Model::rewind); the first answer token comes from the prompt's last
// position, as in the papers. InputError for an unknown or unrunnable method,
// a prompt that does not fit, or a length past the model's context.
std::vector<NeedleResult> run_needle(const vk::Device& device, const Checkpoint& checkpoint, const Tokenizer& tokenizer,
                                     const NeedleConfig& config, const NeedleProgress& progress = {},
                                     const sweep::CellHooks<NeedleResult>& cells = {});

}  // namespace kv::model
