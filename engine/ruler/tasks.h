#pragma once
// RULER's synthetic tasks (Hsieh et al., 2024; NVIDIA/RULER's
// scripts/synthetic.yaml and scripts/data/synthetic/), built from their
// published definitions: the NIAH family (a needle or several in a noise,
// essay or needle haystack; keys and values as words, numbers or UUIDs),
// variable tracking, common-words and frequent-words extraction. Each prompt
// is fitted to a length in the model's own tokens (the prompt plus the
// tokens the task generates), and scored by RULER's string match
// (ruler/ruler_files.h).
// docs/methods.md ("RULER") says where this departs from RULER's sources.
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/tokenizer.h"

namespace kv::ruler {

enum class TaskKind { niah, variable_tracking, common_words, frequent_words };
enum class Haystack { noise, essay, needle };
enum class ItemType { words, numbers, uuids };

// One task of RULER's synthetic.yaml with its generation settings.
struct TaskSpec {
  const char* name;
  TaskKind kind;
  uint32_t tokens_to_generate;  // constants.py's, per kind
  // niah
  Haystack haystack = Haystack::noise;
  ItemType key_type = ItemType::words, value_type = ItemType::numbers;
  uint32_t keys = 1, values = 1, queries = 1;
  // variable_tracking
  uint32_t chains = 1, hops = 4;
  // common_words: the common words' repeats, the others', how many are common
  uint32_t common_repeats = 30, uncommon_repeats = 3, common_count = 10;
  // frequent_words: the Zipf exponent of the coded words' counts
  double alpha = 2.0;
};

// The 11 synthetic tasks, in RULER's order: niah_single_1..3,
// niah_multikey_1..3, niah_multivalue, niah_multiquery, vt, cwe, fwe.
const std::vector<TaskSpec>& task_table();
// InputError (setting "tasks") naming the tasks for an unknown name.
const TaskSpec& find_task(const std::string& name);

// The texts the tasks draw from: words for keys and the common-words lists,
// prose for the essay haystack.
struct TaskTexts {
  std::vector<std::string> words;
  std::string essay;
};
// Debian's wamerican word list (/usr/share/dict/american-english), or the
// list at `path`: its lowercase words of 3 to 10 letters, one a line.
// InputError (setting "words") when it cannot be read or holds too few.
std::vector<std::string> read_word_list(const std::string& path);
inline const char* const kDefaultWordList = "/usr/share/dict/american-english";

struct RulerPrompt {
  std::string input;          // the task's text before its answer prefix
  std::string answer_prefix;  // where the model's answer starts
  std::vector<std::string> outputs;  // the references string match looks for
  std::vector<int32_t> tokens;       // the whole prompt in the model's tokens, BOS first
  uint32_t generate = 0;             // the task's tokens to generate
};

// Sample `sample` of `task` for prompts of `length` tokens (the prompt plus
// the tokens it generates), deterministic for `seed`. With a chat tokenizer
// (model/chat.h) the input is wrapped as the user's turn and the answer
// prefix follows the assistant's header, as RULER's model templates place
// it. InputError (setting "lengths") when the task's smallest prompt does not
// fit, and (setting "words") when the word list is too short.
RulerPrompt ruler_prompt(const TaskSpec& task, const model::Tokenizer& tokenizer, const model::ModelConfig& model,
                         const TaskTexts& texts, uint32_t length, uint32_t seed, uint32_t sample);

// InputError (setting "lengths") when the task's smallest prompt and its
// answer do not fit `length`: a sweep checks every task and length first.
void check_length(const TaskSpec& task, const model::Tokenizer& tokenizer, const model::ModelConfig& model,
                  const TaskTexts& texts, uint32_t length);

}  // namespace kv::ruler
