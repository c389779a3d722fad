#include "ruler/ruler_files.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

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

// One code point of UTF-8 at s[i] (its length in n), or -1 for a byte that starts none.
int32_t next_code_point(const std::string& s, size_t i, size_t& n) {
  const uint8_t b = uint8_t(s[i]);
  n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return n = 1, -1;
  int32_t cp = n == 1 ? b : b & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((uint8_t(s[i + k]) & 0xc0) != 0x80) return n = 1, -1;
    cp = (cp << 6) | (uint8_t(s[i + k]) & 0x3f);
  }
  return cp;
}

void append_utf8(std::string& out, int32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xc0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3f));
  } else {
    out += char(0xe0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  }
}

int32_t lower_code_point(int32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c >= 0xc0 && c <= 0xde && c != 0xd7) return c + 32;  // Latin-1
  if (c >= 0x100 && c <= 0x17f) {                            // Latin Extended-A: pairs
    if (c == 0x130 || c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17f) return c;  // İ lowers to two code points
    if (c == 0x178) return 0xff;
    const bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e);
    return (c % 2 == 1) == odd_upper ? c + 1 : c;
  }
  if (c >= 0x391 && c <= 0x3a9 && c != 0x3a2) return c + 32;  // Greek
  if (c == 0x386) return 0x3ac;
  if (c >= 0x388 && c <= 0x38a) return c + 37;
  if (c == 0x38c) return 0x3cc;
  if (c == 0x38e || c == 0x38f) return c + 63;
  if (c >= 0x410 && c <= 0x42f) return c + 32;  // Cyrillic
  if (c >= 0x400 && c <= 0x40f) return c + 80;
  return c;
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
  for (size_t i = 0, n = 0; i < text.size(); i += n) {
    const int32_t cp = next_code_point(text, i, n);
    if (cp < 0 || n == 4) out.append(text, i, n);
    else append_utf8(out, lower_code_point(cp));
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
