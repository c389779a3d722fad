#include "ruler/ruler_files.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include "base/error.h"

namespace kv::ruler {
namespace {

// RULER's 13 tasks in synthetic.yaml's order: discovered folders are run so.
const char* const kRulerOrder[] = {"niah_single_1",   "niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multikey_2",
                                   "niah_multikey_3", "niah_multivalue", "niah_multiquery", "vt", "cwe", "fwe", "qa_1", "qa_2"};

size_t order_of(const std::string& task) {
  const auto* end = std::end(kRulerOrder);
  return size_t(std::find(std::begin(kRulerOrder), end, task) - std::begin(kRulerOrder));
}

uint64_t fnv1a(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : bytes) h = (h ^ uint8_t(c)) * 0x100000001b3ull;
  return h;
}

}  // namespace

uint32_t RulerTaskFile::longest() const {
  uint32_t l = 0;
  for (const RulerRecord& r : records) l = std::max(l, r.length);
  return l;
}

bool ruler_task_settings(const std::string& task, uint32_t& tokens, RulerMetric& metric) {
  // scripts/data/synthetic/constants.py's tokens_to_generate per task type,
  // scripts/eval/synthetic/constants.py's metric_fn per task type.
  metric = RulerMetric::string_match_all;
  if (task.rfind("niah_", 0) == 0) tokens = 128;
  else if (task == "vt") tokens = 30;
  else if (task == "cwe") tokens = 120;
  else if (task == "fwe") tokens = 50;
  else if (task.rfind("qa_", 0) == 0) tokens = 32, metric = RulerMetric::string_match_part;
  else return false;
  return true;
}

const char* metric_name(RulerMetric metric) {
  return metric == RulerMetric::string_match_part ? "string_match_part" : "string_match_all";
}

std::vector<std::string> ruler_data_tasks(const std::filesystem::path& dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) throw InputError(dir.string() + ": no such folder", "data");
  std::vector<std::string> tasks;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error))
    if (std::filesystem::is_regular_file(entry.path() / "validation.jsonl", error))
      tasks.push_back(entry.path().filename().string());
  if (error) throw InputError(dir.string() + ": cannot list it (" + error.message() + ")", "data");
  if (tasks.empty())
    throw InputError(dir.string() + " holds no task folder with a validation.jsonl (RULER's prepare.py writes DIR/<task>/validation.jsonl)",
                     "data");
  std::sort(tasks.begin(), tasks.end(), [](const std::string& a, const std::string& b) {
    return std::pair(order_of(a), a) < std::pair(order_of(b), b);
  });
  return tasks;
}

RulerTaskFile read_ruler_task(const std::filesystem::path& dir, const std::string& task, uint32_t max_records) {
  RulerTaskFile file;
  file.task = task;
  file.path = (dir / task / "validation.jsonl").string();
  if (!ruler_task_settings(task, file.tokens_to_generate, file.metric))
    throw InputError(file.path + ": '" + task + "' is not a RULER task (niah_*, vt, cwe, fwe, qa_*); --tasks chooses the folders", "data");
  std::error_code error;
  if (!std::filesystem::is_regular_file(file.path, error)) throw InputError(file.path + ": no such file", "data");
  std::ifstream in(file.path, std::ios::binary);
  if (!in) throw InputError(file.path + ": cannot read it", "data");
  std::ostringstream whole;
  whole << in.rdbuf();
  const std::string bytes = whole.str();
  file.fnv1a = fnv1a(bytes);
  std::istringstream lines(bytes);
  uint32_t number = 0;
  for (std::string text; std::getline(lines, text);) {
    ++number;
    if (max_records && file.records.size() == max_records) break;
    // NeMo's read_manifest, which RULER reads with, skips blank lines.
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto fail = [&](const std::string& what) {
      return InputError(file.path + " line " + std::to_string(number) + ": " + what, "data");
    };
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      throw fail("not JSON (at byte " + std::to_string(e.byte) + ")");
    }
    if (!j.is_object()) throw fail("not a JSON object");
    RulerRecord r;
    r.line = number;
    if (!j.contains("input")) throw fail("no 'input'");
    if (!j["input"].is_string()) throw fail("'input' is not a string");
    r.input = j["input"].get<std::string>();
    if (!j.contains("outputs")) throw fail("no 'outputs'");
    if (!j["outputs"].is_array() || j["outputs"].empty()) throw fail("'outputs' is not a non-empty list");
    for (const nlohmann::json& o : j["outputs"]) {
      if (!o.is_string()) throw fail("'outputs' holds something other than a string");
      r.outputs.push_back(o.get<std::string>());
    }
    if (j.contains("answer_prefix")) {
      if (!j["answer_prefix"].is_string()) throw fail("'answer_prefix' is not a string");
      r.answer_prefix = j["answer_prefix"].get<std::string>();
    }
    if (j.contains("length")) {
      if (!j["length"].is_number_unsigned() || j["length"].get<uint64_t>() > (1ull << 31)) throw fail("'length' is not a count of tokens");
      r.length = j["length"].get<uint32_t>();
    }
    r.index = int64_t(file.records.size());
    if (j.contains("index")) {
      if (!j["index"].is_number_integer()) throw fail("'index' is not an integer");
      r.index = j["index"].get<int64_t>();
    }
    file.records.push_back(std::move(r));
  }
  if (file.records.empty()) throw InputError(file.path + ": no record", "data");
  return file;
}

std::string postprocess_prediction(const std::string& prediction) {
  // Python's str.strip() also strips Unicode spaces (U+00A0, U+2000..): they
  // would matter only to a reference that starts or ends with one.
  auto trim = [](std::string s) {
    const char* space = " \t\n\r\f\v\x1c\x1d\x1e\x1f";
    const size_t first = s.find_first_not_of(space);
    if (first == std::string::npos) return std::string();
    return s.substr(first, s.find_last_not_of(space) - first + 1);
  };
  std::string s = trim(prediction);
  for (char& c : s)
    if (uint8_t(c) < 0x20) c = '\n';
  return trim(s);
}

std::string lowercase(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  const int32_t length = int32_t(text.size());
  for (int32_t i = 0; i < length;) {
    const int32_t start = i;
    UChar32 c;
    U8_NEXT(bytes, i, length, c);
    if (c < 0) {
      out.append(text, size_t(start), size_t(i - start));
      continue;
    }
    char lowered[U8_MAX_LENGTH];
    int32_t n = 0;
    U8_APPEND_UNSAFE(lowered, n, u_tolower(c));
    out.append(lowered, size_t(n));
  }
  return out;
}

double string_match_all(const std::string& prediction, const std::vector<std::string>& references) {
  if (references.empty()) return 0;
  const std::string said = lowercase(postprocess_prediction(prediction));
  size_t found = 0;
  for (const std::string& r : references) found += said.find(lowercase(r)) != std::string::npos ? 1 : 0;
  return double(found) / double(references.size());
}

double string_match_part(const std::string& prediction, const std::vector<std::string>& references) {
  const std::string said = lowercase(postprocess_prediction(prediction));
  for (const std::string& r : references)
    if (said.find(lowercase(r)) != std::string::npos) return 1;
  return 0;
}

double ruler_score(RulerMetric metric, const std::string& prediction, const std::vector<std::string>& references) {
  return metric == RulerMetric::string_match_part ? string_match_part(prediction, references)
                                                  : string_match_all(prediction, references);
}

}  // namespace kv::ruler
