#include "sweep/reports.h"

#include <cstdio>

#include "base/error.h"
#include "model/needle.h"
#include "sweep/needle_plot.h"

namespace kv::sweep {
namespace {

// The config's settings beside the results, as needle and ppl write them.
nlohmann::json with_results(const nlohmann::json& config, const std::vector<std::optional<nlohmann::json>>& results) {
  nlohmann::json report = config, all = nlohmann::json::array();
  for (const auto& r : results)
    if (r) all.push_back(*r);
  report["results"] = all;
  return report;
}

}  // namespace

std::vector<nlohmann::json> speed_tables(const SweepHeader& h, const std::vector<std::optional<nlohmann::json>>& results) {
  std::vector<nlohmann::json> tables = h.config.at("tables").get<std::vector<nlohmann::json>>();
  for (nlohmann::json& t : tables) t["results"] = nlohmann::json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i]) continue;
    nlohmann::json& table = tables.at(h.cells[i].at("table").get<size_t>());
    // The dense prefill the decode steps start from: the first result's run timed it.
    if (table.at("regime") == "decode" && !table.contains("prefill_ms")) table["prefill_ms"] = results[i]->at("prefill_ms");
    table["results"].push_back(*results[i]);
  }
  return tables;
}

namespace {

// speed: one table alone is the report, else {"decode": table, "prefill":
// table or a list of them}.
nlohmann::json speed_report(const SweepHeader& h, const std::vector<std::optional<nlohmann::json>>& results) {
  const std::vector<nlohmann::json> tables = speed_tables(h, results);
  if (tables.size() == 1) return tables[0];
  nlohmann::json report, prefill = nlohmann::json::array();
  for (const nlohmann::json& t : tables) {
    if (t.at("regime") == "decode") report["decode"] = t;
    else prefill.push_back(t);
  }
  if (!prefill.empty()) report["prefill"] = prefill.size() == 1 ? prefill[0] : prefill;
  return report;
}

std::string needle_csv(const nlohmann::json& report) {
  const std::string task = report.at("task").get<std::string>();
  std::string csv = "task,length,depth,method,budget,regime,accuracy,correct,samples\n";
  for (const model::NeedleResult& r : model::needle_results_from_json(report)) {
    char line[256];
    std::snprintf(line, sizeof line, "%s,%u,%.4g,%s,%u,%s,%.6g,%u,%u\n", task.c_str(), r.length, r.depth, r.method.c_str(),
                  r.budget, model::plan_regime_name(r.plan), r.accuracy(), r.correct, r.samples);
    csv += line;
  }
  return csv;
}

std::string eval_csv(const nlohmann::json& rows) {
  std::string csv = "layer,method,budget,mode,coverage,recall,output_error,needle_recall,select_ms,attention_ms\n";
  for (const nlohmann::json& row : rows) {
    char line[256], needle[32] = "";
    if (row.contains("needle_recall")) std::snprintf(needle, sizeof needle, "%.6f", row.at("needle_recall").get<double>());
    std::snprintf(line, sizeof line, "%d,%s,%u,%s,%.6f,%.6f,%.6f,%s,%.6f,%.6f\n", row.at("layer").get<int>(),
                  row.at("method").get<std::string>().c_str(), row.at("budget").get<uint32_t>(),
                  row.at("mode").get<std::string>().c_str(), row.at("coverage").get<double>(), row.at("recall").get<double>(),
                  row.at("output_error").get<double>(), needle, row.at("select_ms").get<double>(),
                  row.at("attention_ms").get<double>());
    csv += line;
  }
  return csv;
}

std::string ruler_csv(const nlohmann::json& report) {
  std::string csv = "task,length,method,budget,regime,score,samples\n";
  for (const nlohmann::json& r : report.at("results")) {
    char line[256];
    std::snprintf(line, sizeof line, "%s,%u,%s,%u,%s,%.4f,%u\n", r.at("task").get<std::string>().c_str(),
                  r.at("length").get<uint32_t>(), r.at("method").get<std::string>().c_str(), r.at("budget").get<uint32_t>(),
                  r.at("regime").get<std::string>().c_str(), r.at("score").get<double>(), r.at("samples").get<uint32_t>());
    csv += line;
  }
  return csv;
}

}  // namespace

nlohmann::json report_json(const SweepHeader& h, const std::vector<std::optional<nlohmann::json>>& results) {
  try {
    if (h.command == "needle" || h.command == "ppl" || h.command == "ruler") return with_results(h.config, results);
    if (h.command == "speed") return speed_report(h, results);
    if (h.command == "eval") return with_results({}, results).at("results");
  } catch (const nlohmann::json::exception& e) {
    throw InputError("the " + h.command + " results do not make its report: " + e.what());
  }
  throw InputError("no report for the command '" + h.command + "'");
}

bool has_csv(const std::string& command) { return command == "needle" || command == "eval" || command == "ruler"; }
bool has_plot(const std::string& command) { return command == "needle"; }

std::string report_csv(const std::string& command, const nlohmann::json& report) {
  try {
    if (command == "needle") return needle_csv(report);
    if (command == "eval") return eval_csv(report);
    if (command == "ruler") return ruler_csv(report);
  } catch (const nlohmann::json::exception& e) {
    throw InputError("the " + command + " results do not make its CSV: " + e.what());
  }
  throw InputError(command + " writes no CSV", "csv");
}

void write_report_plot(const std::string& command, const nlohmann::json& report, const std::string& path) {
  if (command != "needle") throw InputError(command + " draws no plot", "plot");
  write_needle_plot(path, report.at("task").get<std::string>(), model::needle_results_from_json(report));
}

void write_reports(const SweepHeader& header, const std::vector<std::optional<nlohmann::json>>& results,
                   const ReportPaths& paths) {
  if (!paths.csv.empty() && !has_csv(header.command)) throw InputError(header.command + " writes no CSV", "csv");
  if (!paths.plot.empty() && !has_plot(header.command)) throw InputError(header.command + " draws no plot", "plot");
  const nlohmann::json report = report_json(header, results);
  if (!paths.json.empty()) write_text_atomically(paths.json, report_text(report));
  if (!paths.csv.empty()) write_text_atomically(paths.csv, report_csv(header.command, report));
  if (!paths.plot.empty()) write_report_plot(header.command, report, paths.plot);
}

std::string report_text(const nlohmann::json& report) {
  return report.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace kv::sweep
