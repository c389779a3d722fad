#pragma once
// RULER's own generated files and RULER's metrics. NVIDIA/RULER's
// scripts/data/prepare.py writes a folder a task, DIR/<task>/validation.jsonl,
// one JSON object a line: `input` (the prompt, already in the chat template
// it was made with), `answer_prefix` (optional: where the answer starts),
// `outputs` (the reference strings), `length` (the prompt and the tokens to
// generate, in the tokenizer RULER prepared with), `index`; other fields
// (`others`, `token_position_answer`, `length_w_model_temp`) are ignored.
// scripts/pred/call_api.py feeds `input` + `answer_prefix` to the model;
// scripts/eval/evaluate.py scores the prediction with the task's metric from
// scripts/eval/synthetic/constants.py. No model and no CLI here.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kv::ruler {

struct RulerRecord {
  int64_t index = 0;  // the record's `index` (its line's order where absent)
  std::string input, answer_prefix;
  std::vector<std::string> outputs;
  uint32_t length = 0;  // RULER's count, 0 where absent
  uint32_t line = 0;    // 1-based, for errors
};

enum class RulerMetric { string_match_all, string_match_part };

struct RulerTaskFile {
  std::string task;  // the folder's name: niah_single_1 .. qa_2
  std::string path;  // DIR/<task>/validation.jsonl
  std::vector<RulerRecord> records;
  uint32_t tokens_to_generate = 0;  // RULER's for the task (synthetic/constants.py)
  RulerMetric metric = RulerMetric::string_match_all;
  uint64_t fnv1a = 0;  // of the file's bytes: a resumed sweep must read the same file
  uint32_t longest() const;  // the largest `length` of its records
};

// The task folders of `dir` that hold validation.jsonl, in RULER's order
// (synthetic.yaml: niah_single_1 .. fwe, qa_1, qa_2), others after by name.
// InputError (setting "data") for a missing folder or one without tasks.
std::vector<std::string> ruler_data_tasks(const std::filesystem::path& dir);

// dir/<task>/validation.jsonl read whole, its first `max_records` records
// (0: all). InputError (setting "data") in one line naming the file and line
// for a missing file, a line that is not a JSON object, a record without a
// string `input` or a non-empty list of strings `outputs`, a field of the
// wrong type, a file without records, and a task name that is not RULER's.
RulerTaskFile read_ruler_task(const std::filesystem::path& dir, const std::string& task, uint32_t max_records = 0);

// RULER's tokens to generate and metric for a task name: niah_* 128, vt 30,
// cwe 120, fwe 50, qa_* 32; string_match_part for qa_*, string_match_all
// otherwise. False for a name that is none of those.
bool ruler_task_settings(const std::string& task, uint32_t& tokens_to_generate, RulerMetric& metric);
const char* metric_name(RulerMetric metric);

// evaluate.py's postprocess_pred: trimmed, control characters (U+0000 to
// U+001F) made newlines, trimmed again. Nothing is cut at a newline.
std::string postprocess_prediction(const std::string& prediction);
// constants.py's metrics for one prediction, 0..1 (RULER's are these times
// 100, averaged over the task's predictions): whether each reference,
// lowercased, is a substring of the lowercased postprocessed prediction;
// string_match_all the share of references found, string_match_part 1 if any.
double string_match_all(const std::string& prediction, const std::vector<std::string>& references);
double string_match_part(const std::string& prediction, const std::vector<std::string>& references);
double ruler_score(RulerMetric metric, const std::string& prediction, const std::vector<std::string>& references);
// Python's str.lower on UTF-8 text by ICU's simple case mapping (a code
// point for a code point, where Python lowers U+0130 to two); bytes that are
// not UTF-8 as they are.
std::string lowercase(const std::string& text);

}  // namespace kv::ruler
