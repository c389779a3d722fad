#include "needle_results.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "error.h"
#include "methods/table.h"

namespace kv::viewer {

NeedleResults read_needle_results(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw InputError("cannot read " + path);
  NeedleResults r;
  r.path = path;
  try {
    const nlohmann::json j = nlohmann::json::parse(file);
    r.model = j.at("model").get<std::string>();
    r.tokenizer = j.value("tokenizer", "");
    r.task = j.at("task").get<std::string>();
    r.haystack_file = j.value("haystack_file", "");
    r.seed = j.at("seed").get<uint32_t>();
    r.chunk = j.at("chunk").get<uint32_t>();
    r.dense_layers = j.value("dense_layers", std::vector<uint32_t>{});
    for (const auto& [flag, text] : j.at("options").items()) find_option(flag).parse(r.options, text.get<std::string>());
    for (const nlohmann::json& c : j.at("results"))
      r.cells.push_back({c.at("length").get<uint32_t>(), c.at("depth").get<double>(), c.at("method").get<std::string>(),
                         c.at("budget").get<uint32_t>(), c.at("regime").get<std::string>(), c.at("accuracy").get<double>(),
                         c.at("samples").get<uint32_t>()});
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + " is not kvscope needle's JSON: " + e.what());
  }
  if (r.cells.empty()) throw InputError(path + " holds no results");
  return r;
}

}  // namespace kv::viewer
