#pragma once
// Room ruler/: RULER's synthetic tasks run through the model; it includes
// base/ to methods/ and the other top rooms.
// RULER's synthetic tasks (ruler/tasks.h) with each method inside the model:
// for every task and length, --samples prompts run with dense and each method
// and budget in the regime asked (model/prompt_runs.h), the answer generated
// greedily after the task's answer prefix and scored by RULER's string match.
// With RULER's own files (ruler/ruler_files.h) in place of generated prompts,
// a task's records are its samples, fed to the model as written.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/selection_plan.h"
#include "model/tokenizer.h"
#include "ruler/ruler_files.h"
#include "ruler/tasks.h"
#include "sweep/results.h"
#include "vk/device.h"

namespace kv::ruler {

struct RulerConfig {
  std::vector<std::string> tasks;  // names of task_table() rows
  std::vector<uint32_t> lengths;   // prompt plus the task's generated tokens
  uint32_t samples = 1;            // prompts per (task, length)
  uint32_t seed = 0;
  model::MethodSweep sweep;
  uint32_t chunk = 128;
  TaskTexts texts;
  // At most this many tokens generated (0: each task's own). Generation
  // also stops at an end of sequence and once every reference is in the
  // answer, where the score can no longer change.
  uint32_t max_generate = 0;
  // RULER's generated files, a task each (`tasks` their names): each record's
  // input and answer prefix, as written, after the model's BOS, its answer
  // scored by the task's metric; lengths, samples, seed and texts unused.
  std::vector<RulerTaskFile> files;
  std::string data_dir;  // where they were read, for the settings
};

// config read from RULER's files in dir (`kvscope ruler --data`): the
// `tasks` given (empty: every task folder there), each its first
// `max_records` records (0: all), and dir for the settings.
void read_ruler_files(RulerConfig& config, const std::filesystem::path& dir, std::vector<std::string> tasks,
                      uint32_t max_records);

// One cell: a (task, length, method, budget) over its samples.
struct RulerResult {
  std::string task;
  uint32_t length = 0;  // with files: the largest of the records' own lengths
  std::string method;
  uint32_t budget = 0;  // 0 for dense
  model::SelectionPlan plan;
  double matched = 0;  // the task's metric (string_match_all or _part) summed over the samples
  uint32_t samples = 0;
  std::vector<std::string> predictions;                // what the model said, per sample
  std::vector<std::vector<std::string>> references;    // what it should have, per sample
  std::vector<int64_t> indices;                        // with files: each sample's record `index`
  double score() const { return samples ? 100 * matched / samples : 0; }  // RULER's 0..100
};

// The cells in the order run_ruler reports them: per length, per task (a
// group: its prompts), dense then each method and budget.
sweep::SweepCells ruler_cells(const RulerConfig& config);

// `kvscope ruler --json` (docs/cli.md): the settings, and a result object
// per cell under "results".
nlohmann::json ruler_settings_json(const RulerConfig& config);
nlohmann::json ruler_result_json(const RulerResult& result);

using RulerProgress = std::function<void(size_t done, size_t total)>;

// Runs the cells `cells` wants, handing each to cells.done as its last sample
// finishes, and returns them in order. InputError for an unknown task or
// method, a length past the model's context or too short for a task, and
// (setting "data") a file's prompt and answer past the model's context.
std::vector<RulerResult> run_ruler(const vk::Device& device, const model::Checkpoint& checkpoint,
                                   const model::Tokenizer& tokenizer, const RulerConfig& config,
                                   const RulerProgress& progress = {}, const sweep::CellHooks<RulerResult>& cells = {});

}  // namespace kv::ruler
