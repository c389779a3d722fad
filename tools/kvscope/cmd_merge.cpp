#include <cstdio>

#include "args.h"
#include "commands.h"
#include "base/error.h"
#include "output_files.h"
#include "sweep/reports.h"
#include "sweep/results.h"

namespace kv::cli {

const char* const kMergeHelp =
    "usage: kvscope merge OUT.jsonl IN1.jsonl IN2.jsonl ... [--json J] [--csv C] [--plot P.png]\n\n"
    "Joins the results files of a sweep's shards (needle, ppl, speed or eval run with\n"
    "--results F --shard I/N) into OUT.jsonl, the whole sweep's results file in its\n"
    "order, and writes the reports one run of the sweep writes: --json, --csv (needle,\n"
    "eval) and --plot (needle). Refused in one line when the inputs are not the shards\n"
    "of one sweep (command, settings, cells), a shard is missing or given twice, or a\n"
    "cell is in none of them (a shard that did not finish: --resume it) or in two.\n";

int run_merge(const GlobalOptions&, const std::vector<std::string>& argv) {
  const Args args("merge", argv, {"json", "csv", "plot"}, {});
  const std::vector<std::string> files = args.positional();
  if (files.size() < 2) throw InputError("merge: give the output file, then the shards' results files");
  const std::vector<std::string> inputs(files.begin() + 1, files.end());
  const sweep::ReportPaths paths{args.text("json", ""), args.text("csv", ""), args.text("plot", "")};
  for (const std::string& path : {files[0], paths.json, paths.csv, paths.plot})
    if (!path.empty()) require_output_folder(path);

  const sweep::ResultsFileContents merged = sweep::merge_results(inputs);
  // The reports first: a refusal (--csv of a sweep without one) leaves no output.
  sweep::write_reports(merged.header, merged.results, paths);
  sweep::write_results_file(files[0], merged.header, merged.results);
  std::printf("merge: %zu shards of a %s sweep, %zu cells, into %s\n", inputs.size(), merged.header.command.c_str(),
              merged.results.size(), files[0].c_str());
  return 0;
}

}  // namespace kv::cli
