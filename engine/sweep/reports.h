#pragma once
// What a sweep command writes at its end (--json, --csv, --plot), built from
// its results file's header and its cells' results alone: a run, a resumed
// run and a merge of shards write the same bytes for the same cells.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sweep/results.h"

namespace kv::sweep {

// The command's JSON (docs/cli.md) over the cells that have a result, in the
// sweep's order.
nlohmann::json report_json(const SweepHeader& header, const std::vector<std::optional<nlohmann::json>>& results);
// speed's tables (decode first, then prefill a chunk each), each with its
// cells' results, as report_json holds them.
std::vector<nlohmann::json> speed_tables(const SweepHeader& header, const std::vector<std::optional<nlohmann::json>>& results);

// Whether the command writes a CSV (needle, eval) and a plot (needle).
bool has_csv(const std::string& command);
bool has_plot(const std::string& command);
// The CSV of a report_json; InputError for a command without one.
std::string report_csv(const std::string& command, const nlohmann::json& report);
// The plot of a report_json as a PNG at `path` (atomically); InputError for
// a command without one.
void write_report_plot(const std::string& command, const nlohmann::json& report, const std::string& path);

// A report as its file holds it (indented; a model's text cut inside a
// character has U+FFFD there).
std::string report_text(const nlohmann::json& report);

// The outputs asked for ("" where not), from a results file's contents:
// what `kvscope merge` and kvscope.merge() write.
struct ReportPaths {
  std::string json, csv, plot;
};
void write_reports(const SweepHeader& header, const std::vector<std::optional<nlohmann::json>>& results,
                   const ReportPaths& paths);

}  // namespace kv::sweep
