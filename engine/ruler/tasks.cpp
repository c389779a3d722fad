#include "ruler/tasks.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <sstream>

#include "base/error.h"
#include "model/chat.h"
#include "model/prompts.h"

namespace kv::ruler {
namespace {

// constants.py's templates and answer prefixes, per kind.
const char* const kNiahTemplate =
    "Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. I will quiz "
    "you about the {type_needle_v} afterwards.\n{context}\nWhat are all the special magic {type_needle_v} for {query} "
    "mentioned in the provided text?";
const char* const kNiahPrefix = " The special magic {type_needle_v} for {query} mentioned in the provided text are";
const char* const kVtTemplate =
    "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n{context}\nQuestion: Find "
    "all variables that are assigned the value {query} in the text above.";
const char* const kVtPrefix =
    " Answer: According to the chain(s) of variable assignment in the text above, {num_v} variables are assigned the "
    "value {query}, they are: ";
const char* const kCweTemplate =
    "Below is a numbered list of words. In these words, some appear more often than others. Memorize the ones that "
    "appear most often.\n{context}\nQuestion: What are the 10 most common words in the above list?";
const char* const kCwePrefix = " Answer: The top 10 words that appear most often in the list are:";
const char* const kFweTemplate =
    "Read the following coded text and track the frequency of each coded word. Find the three most frequently appeared "
    "coded words. {context}\nQuestion: Do not provide any explanation. Please ignore the dots '....'. What are the "
    "three most frequently appeared words in the above coded text?";
const char* const kFwePrefix = " Answer: According to the coded text above, the three most frequently appeared words are:";

// niah.py's and variable_tracking.py's noise sentence, and niah.py's needle.
const char* const kNoise = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string text;
  for (size_t i = 0; i < items.size(); ++i) text += (i ? separator : "") + items[i];
  return text;
}

// Python's random.sample and random.shuffle in kind (not in their streams):
// k distinct picks of [0, n) in random order, and a shuffle.
class Draws {
 public:
  explicit Draws(uint64_t seed) : rng_(seed) {}
  uint64_t below(uint64_t n) { return rng_() % n; }
  uint64_t between(uint64_t low, uint64_t high) { return low + below(high - low + 1); }  // inclusive
  std::vector<size_t> sample(size_t n, size_t k) {
    if (k > n) throw InputError("cannot draw " + std::to_string(k) + " of " + std::to_string(n));
    std::vector<size_t> picks;
    if (k * 4 < n) {
      std::set<size_t> seen;
      while (picks.size() < k)
        if (const size_t i = size_t(below(n)); seen.insert(i).second) picks.push_back(i);
      return picks;
    }
    std::vector<size_t> all(n);
    for (size_t i = 0; i < n; ++i) all[i] = i;
    for (size_t i = 0; i < k; ++i) std::swap(all[i], all[i + size_t(below(n - i))]);
    return {all.begin(), all.begin() + std::ptrdiff_t(k)};
  }
  template <typename T>
  void shuffle(std::vector<T>& items) {
    for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[size_t(below(i))]);
  }
  std::string letters(size_t count, char first) {
    std::string s;
    for (size_t i = 0; i < count; ++i) s += char(first + below(26));
    return s;
  }

 private:
  std::mt19937_64 rng_;
};

// niah.py's DEPTHS: np.round(np.linspace(0, 100, 40)), none of which is a tie.
std::vector<int> depths() {
  std::vector<int> d;
  for (int i = 0; i < 40; ++i) d.push_back(int(std::lround(100.0 * i / 39)));
  return d;
}

std::string item(ItemType type, Draws& draws, const std::vector<std::string>& words) {
  switch (type) {
    case ItemType::numbers:
      return std::to_string(draws.between(1000000, 9999999));
    case ItemType::words:  // RULER's adjective-noun pairs: two words of the list
      return words[draws.below(words.size())] + "-" + words[draws.below(words.size())];
    case ItemType::uuids: {  // uuid.UUID(int=getrandbits(128), version=4)
      const char* hex = "0123456789abcdef";
      std::string u;
      for (int i = 0; i < 32; ++i) {
        uint64_t digit = draws.below(16);
        if (i == 12) digit = 4;
        if (i == 16) digit = 8 + digit % 4;
        if (i == 8 || i == 12 || i == 16 || i == 20) u += '-';
        u += hex[digit];
      }
      return u;
    }
  }
  return "";
}

const char* type_name(ItemType type) {
  return type == ItemType::words ? "words" : type == ItemType::numbers ? "numbers" : "uuids";
}

// The essay's words (whitespace-split), its first `count` (repeated as
// needed), cut into sentences after words that end one.
std::vector<std::string> essay_sentences(const std::vector<std::string>& essay_words, size_t count) {
  std::vector<std::string> sentences;
  std::string sentence;
  for (size_t i = 0; i < count; ++i) {
    const std::string& w = essay_words[i % essay_words.size()];
    sentence += (sentence.empty() ? "" : " ") + w;
    std::string end = w;
    while (!end.empty() && std::string("\"')]").find(end.back()) != std::string::npos) end.pop_back();
    if (!end.empty() && std::string(".!?").find(end.back()) != std::string::npos) {
      sentences.push_back(sentence);
      sentence.clear();
    }
  }
  if (!sentence.empty()) sentences.push_back(sentence);
  return sentences;
}

// `inserts` placed among the sentences at depths drawn from niah.py's DEPTHS,
// the pieces joined by spaces (niah.py's and variable_tracking.py's essay case).
std::string insert_at_depths(const std::vector<std::string>& sentences, const std::vector<std::string>& inserts, Draws& draws) {
  const std::vector<int> all = depths();
  std::vector<size_t> positions{0};
  for (size_t pick : draws.sample(all.size(), inserts.size()))
    positions.push_back(size_t(double(sentences.size()) * all[pick] / 100));
  std::sort(positions.begin() + 1, positions.end());
  positions.push_back(sentences.size());
  std::vector<std::string> pieces;
  for (size_t i = 1; i < positions.size(); ++i) {
    pieces.push_back(join({sentences.begin() + std::ptrdiff_t(positions[i - 1]), sentences.begin() + std::ptrdiff_t(positions[i])}, " "));
    if (i - 1 < inserts.size()) pieces.push_back(inserts[i - 1]);
  }
  return join(pieces, " ");
}

struct Parts {
  std::string input, prefix;
  std::vector<std::string> outputs;
};

std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

Parts niah(const TaskSpec& t, const TaskTexts& texts, const std::vector<std::string>& essay_words, size_t units,
           Draws& draws) {
  const std::string needle = "One of the special magic {type_needle_v} for {key} is: {value}.";
  auto needle_text = [&](const std::string& key, const std::string& value) {
    return replace_all(replace_all(replace_all(needle, "{type_needle_v}", type_name(t.value_type)), "{key}", key), "{value}",
                       value);
  };
  const uint32_t key_count = std::max(t.keys, t.queries);
  std::vector<std::string> keys, needles;
  std::vector<std::vector<std::string>> values;
  for (uint32_t k = 0; k < key_count; ++k) {
    keys.push_back(item(t.key_type, draws, texts.words));
    values.emplace_back();
    for (uint32_t v = 0; v < t.values; ++v) {
      values.back().push_back(item(t.value_type, draws, texts.words));
      needles.push_back(needle_text(keys.back(), values.back().back()));
    }
  }
  draws.shuffle(needles);

  std::string context;
  if (t.haystack == Haystack::essay) {
    context = insert_at_depths(essay_sentences(essay_words, units), needles, draws);
  } else {
    std::vector<std::string> sentences;
    for (size_t i = 0; i < units; ++i)
      sentences.push_back(t.haystack == Haystack::noise
                              ? std::string(kNoise)
                              : needle_text(item(t.key_type, draws, texts.words), item(t.value_type, draws, texts.words)));
    std::vector<size_t> at = draws.sample(units, needles.size());
    std::sort(at.rbegin(), at.rend());
    for (size_t i = 0; i < at.size(); ++i) sentences.insert(sentences.begin() + std::ptrdiff_t(at[i]), needles[i]);
    context = join(sentences, "\n");
  }

  std::vector<std::string> queries;
  Parts p;
  for (size_t i : draws.sample(key_count, t.queries)) {
    queries.push_back(keys[i]);
    p.outputs.insert(p.outputs.end(), values[i].begin(), values[i].end());
  }
  std::string query = queries.back();
  if (queries.size() > 1) query = join({queries.begin(), queries.end() - 1}, ", ") + ", and " + queries.back();
  std::string type = type_name(t.value_type), text = kNiahTemplate, prefix = kNiahPrefix;
  if (t.queries * t.values == 1) {  // niah.py: one answer, in the singular
    for (std::string* s : {&text, &prefix}) {
      *s = replace_all(*s, "Some", "A");
      *s = replace_all(*s, "are all", "is");
      *s = replace_all(*s, "are", "is");
      *s = replace_all(*s, "answers", "answer");
    }
    type.pop_back();
  }
  auto fill = [&](std::string s) {
    return replace_all(replace_all(replace_all(s, "{type_needle_v}", type), "{query}", query), "{context}", context);
  };
  p.input = fill(text);
  p.prefix = fill(prefix);
  return p;
}

// variable_tracking.py: chains "VAR A = 12345", "VAR B = VAR A ", ... among
// noise sentences; variable names of 5 letters (3 in the worked example).
Parts variable_tracking(const TaskSpec& t, size_t units, bool example, Draws& draws) {
  const size_t letters = example ? 3 : 5, names = size_t(t.hops + 1) * t.chains;
  std::vector<std::string> vars;
  std::set<std::string> seen;
  while (vars.size() < names)
    if (std::string v = draws.letters(letters, 'A'); seen.insert(v).second) vars.push_back(v);
  std::vector<std::vector<std::string>> chains;
  for (uint32_t c = 0; c < t.chains; ++c) {
    const std::string* v = &vars[size_t(c) * (t.hops + 1)];
    chains.push_back({"VAR " + v[0] + " = " + std::to_string(draws.between(10000, 99998))});
    for (uint32_t j = 0; j < t.hops; ++j) chains.back().push_back("VAR " + v[j + 1] + " = VAR " + v[j] + " ");
  }
  const std::string value = chains[0][0].substr(chains[0][0].rfind(' ') + 1);
  std::vector<std::string> sentences(units, kNoise);
  for (const std::vector<std::string>& chain : chains) {
    std::vector<size_t> at = draws.sample(sentences.size(), chain.size());
    std::sort(at.begin(), at.end());
    for (size_t j = 0; j < chain.size(); ++j) sentences.insert(sentences.begin() + std::ptrdiff_t(at[j] + j), chain[j]);
  }
  const std::string context = replace_all(join(sentences, "\n"), ". \n", ".\n");
  auto fill = [&](std::string s) {
    return replace_all(replace_all(replace_all(s, "{context}", context), "{query}", value), "{num_v}",
                       std::to_string(t.hops + 1));
  };
  return {fill(kVtTemplate), fill(kVtPrefix), {vars.begin(), vars.begin() + t.hops + 1}};
}

// common_words_extraction.py's get_example: `count` distinct words, the first
// `common` of them repeated `common_repeats` times, the rest
// `uncommon_repeats`, shuffled and numbered.
std::pair<std::string, std::vector<std::string>> word_list(const std::vector<std::string>& words, size_t count,
                                                           uint32_t common_repeats, uint32_t uncommon_repeats,
                                                           uint32_t common, Draws& draws) {
  if (count > words.size())
    throw InputError("the word list holds " + std::to_string(words.size()) + " words, fewer than the " +
                         std::to_string(count) + " this length needs",
                     "words");
  std::vector<std::string> picked;
  for (size_t i : draws.sample(words.size(), count)) picked.push_back(words[i]);
  std::vector<std::string> list;
  for (size_t i = 0; i < picked.size(); ++i)
    for (uint32_t r = 0; r < (i < common ? common_repeats : uncommon_repeats); ++r) list.push_back(picked[i]);
  draws.shuffle(list);
  std::string context;
  for (size_t i = 0; i < list.size(); ++i) context += (i ? " " : "") + std::to_string(i + 1) + ". " + list[i];
  return {context, {picked.begin(), picked.begin() + std::min<size_t>(common, picked.size())}};
}

Parts common_words(const TaskSpec& t, const TaskTexts& texts, size_t units, uint32_t length, Draws& draws) {
  const bool short_prompt = length < 4096;  // the script's smaller repeats below 4k
  auto [example, example_answer] = short_prompt ? word_list(texts.words, 20, 3, 1, t.common_count, draws)
                                                 : word_list(texts.words, 40, 10, 3, t.common_count, draws);
  auto [context, answer] = short_prompt ? word_list(texts.words, units, 6, 1, t.common_count, draws)
                                        : word_list(texts.words, units, t.common_repeats, t.uncommon_repeats,
                                                    t.common_count, draws);
  std::string shown;
  for (size_t i = 0; i < example_answer.size(); ++i) shown += " " + std::to_string(i + 1) + ". " + example_answer[i];
  const std::string worked = replace_all(kCweTemplate, "{context}", example) + kCwePrefix + shown;
  return {worked + "\n" + replace_all(kCweTemplate, "{context}", context), kCwePrefix, answer};
}

// freq_words_extraction.py: coded 6-letter words with Zipf counts, the most
// frequent one dots; the answer the next three.
Parts frequent_words(const TaskSpec& t, size_t units, uint32_t length, Draws& draws) {
  const size_t vocab_size = std::max<size_t>(8, (length - t.tokens_to_generate) / 50);
  std::set<std::string> unique;
  while (unique.size() < vocab_size) unique.insert(draws.letters(6, 'a'));
  std::vector<std::string> vocab(unique.begin(), unique.end());
  draws.shuffle(vocab);
  vocab[0] = "...";
  const double zeta = std::pow(std::acos(-1.0), 2) / 6;  // zeta(2); other alphas summed below
  double z = t.alpha == 2.0 ? zeta : 0;
  if (z == 0)
    for (int k = 1; k < 1000000; ++k) z += std::pow(k, -t.alpha);
  std::vector<std::string> text;
  for (size_t k = 0; k < vocab.size(); ++k)
    for (size_t n = size_t(double(units) * std::pow(double(k + 1), -t.alpha) / z); n > 0; --n) text.push_back(vocab[k]);
  draws.shuffle(text);
  return {replace_all(kFweTemplate, "{context}", join(text, " ")), kFwePrefix, {vocab[1], vocab[2], vocab[3]}};
}

std::vector<int32_t> prompt_ids(const model::Tokenizer& tokenizer, const model::ModelConfig& model, const Parts& p) {
  const model::Tokenizer& plain = model::unwrapped_tokenizer(tokenizer);
  if (&plain == &tokenizer) return model::prompt_tokens(tokenizer, model, p.input + p.prefix);
  std::vector<int32_t> ids = model::prompt_tokens(tokenizer, model, p.input);
  const std::vector<int32_t> prefix = plain.encode(p.prefix);
  ids.insert(ids.end(), prefix.begin(), prefix.end());
  return ids;
}

// The largest haystack (in the task's units) whose prompt plus `generate`
// tokens fits `length`: bracketed around an estimate from a small build,
// then bisected.
size_t fit_units(size_t smallest, uint32_t length, uint32_t generate, const std::function<size_t(size_t)>& tokens_of) {
  auto fits = [&](size_t units) { return tokens_of(units) + generate <= length; };
  const size_t base = tokens_of(smallest);
  if (base + generate > length)
    throw InputError("a length of " + std::to_string(length) + " tokens is too short: the smallest prompt takes " +
                         std::to_string(base) + " and the answer " + std::to_string(generate),
                     "lengths");
  const size_t probe = smallest * 8, probe_tokens = tokens_of(probe);
  const double per_unit = std::max(1e-3, double(probe_tokens - std::min(base, probe_tokens)) / double(probe - smallest));
  const size_t estimate = smallest + size_t(std::max(0.0, double(length) - generate - base) / per_unit);
  size_t low = std::max(smallest, estimate / 2), high = std::max(low + 1, estimate * 2);
  while (low > smallest && !fits(low)) low = std::max(smallest, low / 2);
  while (fits(high)) high *= 2;
  while (high - low > 1) {
    const size_t middle = low + (high - low) / 2;
    (fits(middle) ? low : high) = middle;
  }
  return low;
}

}  // namespace

const std::vector<TaskSpec>& task_table() {
  using enum Haystack;
  using enum ItemType;
  const TaskKind niah = TaskKind::niah;
  static const std::vector<TaskSpec> tasks{
      {.name = "niah_single_1", .kind = niah, .tokens_to_generate = 128, .haystack = noise},
      {.name = "niah_single_2", .kind = niah, .tokens_to_generate = 128, .haystack = essay},
      {.name = "niah_single_3", .kind = niah, .tokens_to_generate = 128, .haystack = essay, .value_type = uuids},
      {.name = "niah_multikey_1", .kind = niah, .tokens_to_generate = 128, .haystack = essay, .keys = 4},
      {.name = "niah_multikey_2", .kind = niah, .tokens_to_generate = 128, .haystack = needle},
      {.name = "niah_multikey_3", .kind = niah, .tokens_to_generate = 128, .haystack = needle, .key_type = uuids,
       .value_type = uuids},
      {.name = "niah_multivalue", .kind = niah, .tokens_to_generate = 128, .haystack = essay, .values = 4},
      {.name = "niah_multiquery", .kind = niah, .tokens_to_generate = 128, .haystack = essay, .queries = 4},
      {.name = "vt", .kind = TaskKind::variable_tracking, .tokens_to_generate = 30},
      {.name = "cwe", .kind = TaskKind::common_words, .tokens_to_generate = 120},
      {.name = "fwe", .kind = TaskKind::frequent_words, .tokens_to_generate = 50},
  };
  return tasks;
}

const TaskSpec& find_task(const std::string& name) {
  std::string names;
  for (const TaskSpec& t : task_table()) {
    if (name == t.name) return t;
    names += (names.empty() ? "" : ", ") + std::string(t.name);
  }
  throw InputError("no RULER task '" + name + "' (the synthetic tasks: " + names + ")", "tasks");
}

std::vector<std::string> read_word_list(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw InputError("cannot read the word list " + path +
                         (path == kDefaultWordList ? " (Debian's wamerican: apt install wamerican)" : ""),
                     "words");
  std::vector<std::string> words;
  for (std::string w; std::getline(in, w);)
    if (w.size() >= 3 && w.size() <= 10 && std::all_of(w.begin(), w.end(), [](char c) { return c >= 'a' && c <= 'z'; }))
      words.push_back(w);
  if (words.size() < 100)
    throw InputError(path + " holds " + std::to_string(words.size()) + " lowercase words of 3 to 10 letters; RULER's tasks need hundreds", "words");
  return words;
}

namespace {

// A sample's prompt at any haystack size (in the task's units), with the
// same draws for every size tried: the sample is its size's alone.
struct PromptBuilder {
  std::function<Parts(size_t units)> build;
  size_t smallest;  // units: its needles' places, the common words and one more, the coded words that reach the answer's three
};

PromptBuilder prompt_builder(const TaskSpec& t, const model::Tokenizer& tokenizer, const TaskTexts& texts,
                             uint32_t length, uint32_t seed, uint32_t sample) {
  if (texts.words.size() < 100) throw InputError("RULER's tasks need a word list", "words");
  uint64_t task_hash = 1469598103934665603ull;  // FNV-1a of the name: each task its own draws
  for (const char* c = t.name; *c; ++c) task_hash = (task_hash ^ uint8_t(*c)) * 1099511628211ull;
  const uint64_t sample_seed = task_hash ^ (uint64_t(seed) << 40) ^ (uint64_t(length) << 8) ^ sample;
  auto essay_words = std::make_shared<std::vector<std::string>>(words_of(texts.essay));
  if (t.kind == TaskKind::niah && t.haystack == Haystack::essay && essay_words->empty())
    throw InputError("the essay haystack is empty", "haystack_file");

  std::string example;  // vt's worked example, fitted to 500 tokens as the script's
  if (t.kind == TaskKind::variable_tracking) {
    auto build = [&](size_t units) {
      Draws draws(sample_seed ^ 0x5eed);
      Parts p = variable_tracking(t, units, true, draws);
      return p.input + p.prefix + " " + join(p.outputs, " ") + "\n";
    };
    const size_t units = fit_units(t.hops + 1, 500, 0, [&](size_t u) {
      return model::unwrapped_tokenizer(tokenizer).encode(build(u)).size();
    });
    example = build(units);
  }
  const size_t smallest = t.kind == TaskKind::niah             ? std::max<size_t>(size_t(t.keys) * t.values, 4)
                          : t.kind == TaskKind::common_words   ? t.common_count + 2
                          : t.kind == TaskKind::frequent_words ? 32
                                                               : size_t(t.hops + 1) * t.chains;
  return {[&t, &texts, essay_words, example, sample_seed, length](size_t units) {
            Draws draws(sample_seed);
            Parts p;
            switch (t.kind) {
              case TaskKind::niah: p = niah(t, texts, *essay_words, units, draws); break;
              case TaskKind::variable_tracking:
                p = variable_tracking(t, units, false, draws);
                p.input = example + "\n" + p.input;
                break;
              case TaskKind::common_words: p = common_words(t, texts, units, length, draws); break;
              case TaskKind::frequent_words: p = frequent_words(t, units, length, draws); break;
            }
            return p;
          },
          smallest};
}

}  // namespace

RulerPrompt ruler_prompt(const TaskSpec& t, const model::Tokenizer& tokenizer, const model::ModelConfig& model,
                         const TaskTexts& texts, uint32_t length, uint32_t seed, uint32_t sample) {
  const PromptBuilder b = prompt_builder(t, tokenizer, texts, length, seed, sample);
  const size_t units = fit_units(b.smallest, length, t.tokens_to_generate,
                                 [&](size_t u) { return prompt_ids(tokenizer, model, b.build(u)).size(); });
  const Parts p = b.build(units);
  return {p.input, p.prefix, p.outputs, prompt_ids(tokenizer, model, p), t.tokens_to_generate};
}

void check_length(const TaskSpec& t, const model::Tokenizer& tokenizer, const model::ModelConfig& model,
                  const TaskTexts& texts, uint32_t length) {
  const PromptBuilder b = prompt_builder(t, tokenizer, texts, length, 0, 0);
  const size_t smallest = prompt_ids(tokenizer, model, b.build(b.smallest)).size();
  if (smallest + t.tokens_to_generate > length)
    throw InputError(std::string(t.name) + " needs more than " + std::to_string(length) + " tokens: its smallest prompt takes " +
                         std::to_string(smallest) + " and its answer " + std::to_string(t.tokens_to_generate),
                     "lengths");
}

}  // namespace kv::ruler
