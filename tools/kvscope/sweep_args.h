#pragma once
// --results, --resume and --shard of the sweep commands (needle, ppl, speed,
// eval): each finished cell on disk at once, a killed sweep resumed, a sweep
// split over machines (engine/sweep/results.h).
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "args.h"
#include "sweep/reports.h"
#include "sweep/results.h"

namespace kv::cli {

// The options' lines of --help, a string literal to join the commands' own.
#define KVSCOPE_SWEEP_FILES_HELP                                                              \
  "  --results F.jsonl  each cell appended to F as it finishes, the sweep's settings in\n"    \
  "                     its first line: a run that stops loses only the cells in flight\n"  \
  "  --resume           with --results: run only the cells F lacks (refused when F's\n"    \
  "                     sweep is not this command's), then write what a whole run writes\n" \
  "  --shard I/N        with --results: the I-th of N disjoint slices of the cells\n"       \
  "                     (balanced by their cost); `kvscope merge` joins the N files\n"

std::set<std::string> results_value_options();  // results, shard
inline const char* const kResumeFlag = "resume";

// --results, --resume and --shard checked before any work: InputError for
// --resume or --shard without --results, a bad shard, a results path in a
// missing folder or naming a folder. Returns the shard.
sweep::Shard check_sweep_options(const Args& args, const std::string& command);

// The sweep of `command` over `cells`: in memory, or with --results in that
// file (--resume reading what it holds); --shard picks this run's slice
// (check_sweep_options first).
std::unique_ptr<sweep::SweepResults> open_sweep(const Args& args, const std::string& command, nlohmann::json config,
                                                const sweep::SweepCells& cells);

// The reports asked for (--json, --csv, --plot) over the cells the sweep
// holds; a note on stderr when it is a shard.
void write_sweep_reports(const sweep::SweepResults& sweep, const sweep::ReportPaths& paths);

// What a model command's run depends on beyond its sweep: the model (its
// path, or the config and seed of random weights), the tokenizer and the
// chat format.
nlohmann::json model_identity_json(const Args& args, const std::string& model_path);

}  // namespace kv::cli
