#include "needle_results.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"

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
    r.prompts.task = model::parse_needle_task(j.at("task").get<std::string>());
    r.haystack_file = j.value("haystack_file", "");
    r.prompts.seed = j.at("seed").get<uint32_t>();
    r.chunk = j.at("chunk").get<uint32_t>();
    r.cells = model::needle_results_from_json(j);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + " is not kvscope needle's JSON: " + e.what());
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
  if (r.cells.empty()) throw InputError(path + " holds no results");
  return r;
}

}  // namespace kv::viewer
