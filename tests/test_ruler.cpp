// RULER's synthetic tasks (engine/ruler/tasks.h) against RULER's definitions
// (NVIDIA/RULER scripts/data/synthetic/*.py and constants.py): each task's
// prompt fitted to its length in llama-debian-5m's tokens, its needles,
// chains or word counts, its query and answer prefix; and RULER's string
// match on hand-made predictions. No GPU.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "model/chat.h"
#include "model/checkpoint.h"
#include "model/files.h"
#include "model/prompts.h"
#include "random_capture.h"
#include "ruler/ruler_files.h"
#include "ruler/tasks.h"

namespace kv {
namespace {

using ruler::RulerPrompt;
using ruler::TaskSpec;

// A word list of made-up lowercase words: the tasks' structure does not
// depend on which words (the CLI reads Debian's wamerican).
std::vector<std::string> test_words() {
  std::vector<std::string> words;
  for (char a = 'b'; a <= 'y'; a += 2)
    for (char b = 'a'; b <= 'z'; ++b)
      for (char c : std::string("aeiou")) words.push_back(std::string(1, a) + c + b + "ing");
  return words;
}

// Every needle sentence "One of the special magic {type} for {key} is: {value}."
// of a text, as (key, value).
std::vector<std::pair<std::string, std::string>> needles_in(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> found;
  const std::string start = "One of the special magic ";
  for (size_t at = text.find(start); at != std::string::npos; at = text.find(start, at + 1)) {
    const size_t key = text.find(" for ", at) + 5, is = text.find(" is: ", key);
    const size_t end = std::min(text.find_first_of(" \n", is + 5), text.size());
    const std::string value = text.substr(is + 5, end - is - 6);  // without the full stop
    found.emplace_back(text.substr(key, is - key), value);
  }
  return found;
}

bool is_uuid4(const std::string& u) {
  if (u.size() != 36 || u[14] != '4' || std::string("89ab").find(u[19]) == std::string::npos) return false;
  for (size_t i = 0; i < u.size(); ++i)
    if ((i == 8 || i == 13 || i == 18 || i == 23) ? u[i] != '-' : !std::isxdigit(uint8_t(u[i])) || std::isupper(uint8_t(u[i])))
      return false;
  return true;
}

class RulerTasks : public ::testing::Test {
 protected:
  void SetUp() override {
    checkpoint_ = std::make_unique<model::Checkpoint>(model::Checkpoint::open(KVSCOPE_ASSETS "/models/llama-debian-5m"));
    tokenizer_ = model::open_tokenizer(KVSCOPE_ASSETS "/models/llama-debian-5m", checkpoint_->config().vocab);
    texts_.words = test_words();
    texts_.essay = model::read_text_file(KVSCOPE_ASSETS "/text/licenses.txt");
  }
  RulerPrompt prompt(const std::string& task, uint32_t length, uint32_t sample = 0) const {
    return ruler::ruler_prompt(ruler::find_task(task), *tokenizer_, checkpoint_->config(), texts_, length, seed_, sample);
  }
  static size_t count(const std::string& text, const std::string& part) {
    size_t n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
  }
  std::unique_ptr<model::Checkpoint> checkpoint_;
  std::unique_ptr<model::Tokenizer> tokenizer_;
  ruler::TaskTexts texts_;
  const uint32_t seed_ = test::test_seed();
};

TEST_F(RulerTasks, TheTableIsRulersSyntheticYaml) {
  std::vector<std::string> names;
  for (const TaskSpec& t : ruler::task_table()) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1",
                                             "niah_multikey_2", "niah_multikey_3", "niah_multivalue", "niah_multiquery",
                                             "vt", "cwe", "fwe"}));
  const TaskSpec& mq = ruler::find_task("niah_multiquery");
  EXPECT_EQ(mq.haystack, ruler::Haystack::essay);
  EXPECT_EQ(mq.queries, 4u);
  EXPECT_EQ(ruler::find_task("niah_multikey_3").key_type, ruler::ItemType::uuids);
  EXPECT_EQ(ruler::find_task("niah_multikey_2").haystack, ruler::Haystack::needle);
  EXPECT_EQ(ruler::find_task("vt").tokens_to_generate, 30u);
  EXPECT_EQ(ruler::find_task("cwe").tokens_to_generate, 120u);
  EXPECT_EQ(ruler::find_task("fwe").tokens_to_generate, 50u);
  EXPECT_THROW(ruler::find_task("qa_1"), InputError);
}

// Every task's prompt fits its length with its answer, and fills it (within
// a unit of its haystack), at two lengths (cwe's 30 repeats of its common
// words need more than 4k of this tokenizer's tokens, which spells every
// digit of the list's numbers alone).
TEST_F(RulerTasks, EveryPromptFitsItsLengthInTheModelsTokens) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  for (const TaskSpec& t : ruler::task_table())
    for (uint32_t length : {2048u, 8192u}) {
      SCOPED_TRACE(std::string(t.name) + " at " + std::to_string(length));
      const RulerPrompt p = prompt(t.name, length);
      const size_t total = p.tokens.size() + p.generate;
      EXPECT_LE(total, length);
      EXPECT_GE(total, length * 9 / 10);
      EXPECT_EQ(p.tokens.front(), checkpoint_->config().bos_token);
      EXPECT_EQ(p.tokens, model::prompt_tokens(*tokenizer_, checkpoint_->config(), p.input + p.answer_prefix));
      EXPECT_FALSE(p.outputs.empty());
    }
}

TEST_F(RulerTasks, PromptsAreTheSeedsAndEachSampleItsOwn) {
  EXPECT_EQ(prompt("niah_single_1", 1024).input, prompt("niah_single_1", 1024).input);
  EXPECT_NE(prompt("niah_single_1", 1024, 0).outputs, prompt("niah_single_1", 1024, 1).outputs);
  EXPECT_NE(prompt("vt", 1024, 0).input, prompt("vt", 1024, 1).input);
}

// niah.py: "One of the special magic {type} for {key} is: {value}." once per
// value of each key, the query naming the queried keys, the template in the
// singular for one answer.
TEST_F(RulerTasks, NeedlesQueryAndTemplateAreNiahs) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  for (const char* name : {"niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multikey_2",
                           "niah_multikey_3", "niah_multivalue", "niah_multiquery"}) {
    SCOPED_TRACE(name);
    const TaskSpec& t = ruler::find_task(name);
    const RulerPrompt p = prompt(name, 2048);
    std::map<std::string, std::vector<std::string>> values_of;  // key -> its values, every needle in the text
    for (const auto& [key, value] : needles_in(p.input)) values_of[key].push_back(value);
    const bool one = t.queries * t.values == 1;
    const std::string type = t.value_type == ruler::ItemType::numbers ? "number" : t.value_type == ruler::ItemType::uuids ? "uuid" : "word";
    EXPECT_EQ(p.input.rfind(one ? "A special magic " + type + " is hidden within the following text."
                                : "Some special magic " + type + "s are hidden within the following text.", 0), 0u);
    EXPECT_EQ(p.answer_prefix.rfind(one ? " The special magic " + type + " for " : " The special magic " + type + "s for ", 0), 0u);
    EXPECT_NE(p.answer_prefix.find(one ? "mentioned in the provided text is" : "mentioned in the provided text are"),
              std::string::npos);
    EXPECT_EQ(p.outputs.size(), size_t(t.queries) * t.values);
    // Each answer is a needle's value, its key is asked in the question and the prefix.
    std::set<std::string> queried;
    for (const auto& [key, values] : values_of)
      for (const std::string& v : values)
        if (std::find(p.outputs.begin(), p.outputs.end(), v) != p.outputs.end()) queried.insert(key);
    EXPECT_EQ(queried.size(), size_t(t.queries));
    const std::string question = p.input.substr(p.input.rfind('\n'));
    for (const std::string& key : queried) {
      EXPECT_NE(question.find(key), std::string::npos) << key;
      EXPECT_NE(p.answer_prefix.find(key), std::string::npos) << key;
      EXPECT_EQ(values_of[key].size(), size_t(t.values)) << key;
    }
    if (t.haystack == ruler::Haystack::noise) {
      EXPECT_EQ(values_of.size(), size_t(std::max(t.keys, t.queries)));
      EXPECT_GT(count(p.input, "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.\n"), 20u);
    } else if (t.haystack == ruler::Haystack::needle) {
      EXPECT_GT(values_of.size(), 10u);  // distractor needles of other keys
    } else {
      EXPECT_EQ(values_of.size(), size_t(std::max(t.keys, t.queries)));
      EXPECT_NE(p.input.find("GNU GENERAL PUBLIC LICENSE"), std::string::npos);  // the essay haystack's prose
    }
    if (t.value_type == ruler::ItemType::uuids) {
      EXPECT_TRUE(is_uuid4(p.outputs[0])) << p.outputs[0];
    } else if (t.value_type == ruler::ItemType::numbers) {
      EXPECT_TRUE(p.outputs[0].size() == 7 && p.outputs[0][0] != '0' &&
                  std::all_of(p.outputs[0].begin(), p.outputs[0].end(), [](char c) { return std::isdigit(uint8_t(c)); }))
          << p.outputs[0];
    }
  }
}

// variable_tracking.py: a worked example first (3-letter names, its answer
// given), then one chain VAR A = value, VAR B = VAR A, ... of 5 names in
// order among the noise, the question asking for the value.
TEST_F(RulerTasks, VariableTrackingHoldsOneChainInOrder) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const RulerPrompt p = prompt("vt", 2048);
  ASSERT_EQ(p.outputs.size(), 5u);
  const size_t task = p.input.find("Memorize and track the chain(s)", 1);
  ASSERT_NE(task, std::string::npos) << "no worked example before the task";
  EXPECT_EQ(p.input.rfind("Memorize and track the chain(s)", 0), 0u);
  const std::string text = p.input.substr(task);
  const std::string head = "\nVAR " + p.outputs[0] + " = ";
  const size_t at_value = text.find(head);
  ASSERT_NE(at_value, std::string::npos);
  const std::string value = text.substr(at_value + head.size(), 5);
  ASSERT_EQ(text[at_value + head.size() + 5], '\n');
  EXPECT_NE(text.find("assigned the value " + value + " in the text above."), std::string::npos);
  EXPECT_NE(p.answer_prefix.find("5 variables are assigned the value " + value + ", they are: "), std::string::npos);
  size_t at = text.find("VAR " + p.outputs[0] + " = ");
  for (size_t i = 1; i < 5; ++i) {
    const size_t next = text.find("VAR " + p.outputs[i] + " = VAR " + p.outputs[i - 1] + " \n");
    EXPECT_NE(next, std::string::npos) << i;
    EXPECT_GT(next, at) << i;
    at = next;
  }
  EXPECT_EQ(count(text, "VAR "), 9u);  // 1 + 4 assignments, 4 of them naming another variable
}

// common_words_extraction.py: a numbered list where 10 words come 30 times
// (6 below 4k tokens) and every other 3 times (1), after a worked example.
TEST_F(RulerTasks, CommonWordsRepeatAsTheScriptRepeatsThem) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  for (auto [length, common, other] : {std::tuple{2048u, 6u, 1u}, std::tuple{8192u, 30u, 3u}}) {
    const RulerPrompt p = prompt("cwe", length);
    ASSERT_EQ(p.outputs.size(), 10u);
    const size_t task = p.input.rfind("Below is a numbered list of words.");
    ASSERT_GT(task, 0u) << "no worked example";
    std::map<std::string, uint32_t> counts;
    std::istringstream list(p.input.substr(task, p.input.find("\nQuestion:", task) - task));
    for (std::string token; list >> token;)
      if (token.back() == '.' && std::isdigit(uint8_t(token[0]))) {
        std::string word;
        list >> word;
        counts[word] += 1;
      }
    for (const std::string& w : p.outputs) EXPECT_EQ(counts[w], common) << w;
    for (const auto& [w, n] : counts) {
      if (std::find(p.outputs.begin(), p.outputs.end(), w) == p.outputs.end()) {
        EXPECT_EQ(n, other) << w;
      }
    }
    EXPECT_EQ(p.answer_prefix, " Answer: The top 10 words that appear most often in the list are:");
  }
}

// freq_words_extraction.py: coded words with Zipf counts, the most frequent
// "...", the answer the next three by count.
TEST_F(RulerTasks, FrequentWordsAreTheNextThreeByCount) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const RulerPrompt p = prompt("fwe", 4096);
  ASSERT_EQ(p.outputs.size(), 3u);
  const size_t from = p.input.find("coded words. ") + 13;
  std::map<std::string, size_t> counts;
  std::istringstream text(p.input.substr(from, p.input.find("\nQuestion:") - from));
  for (std::string w; text >> w;) counts[w] += 1;
  std::vector<std::pair<size_t, std::string>> ranked;
  for (const auto& [w, n] : counts) ranked.emplace_back(n, w);
  std::sort(ranked.rbegin(), ranked.rend());
  ASSERT_GE(ranked.size(), 4u);
  EXPECT_EQ(ranked[0].second, "...");
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(ranked[i + 1].second, p.outputs[i]);
  EXPECT_GT(ranked[1].first, ranked[2].first);
}

// Every task generates at RULER's lengths, 4k to 128k, with Llama 3.1's
// tokenizer (tests/data/tokenizers) and Debian's wamerican: 66 prompts, 20 s
// on one core, so not in the suite; --gtest_also_run_disabled_tests runs it.
TEST_F(RulerTasks, DISABLED_EveryTaskGeneratesFrom4kTo128k) {
  const auto llama3 = model::open_tokenizer(KVSCOPE_REAL_TOKENIZERS "/llama3_1/tokenizer.json", 128256);
  texts_.words = ruler::read_word_list(ruler::kDefaultWordList);  // cwe at 128k needs thousands of words
  for (const TaskSpec& t : ruler::task_table())
    for (uint32_t length : {4096u, 8192u, 16384u, 32768u, 65536u, 131072u}) {
      SCOPED_TRACE(std::string(t.name) + " at " + std::to_string(length));
      const RulerPrompt p = ruler::ruler_prompt(t, *llama3, checkpoint_->config(), texts_, length, seed_, 0);
      EXPECT_LE(p.tokens.size() + p.generate, length);
      EXPECT_GE(p.tokens.size() + p.generate, length * 95 / 100);
    }
}

TEST_F(RulerTasks, TooShortALengthIsRefused) {
  EXPECT_THROW(prompt("cwe", 256), InputError);
  EXPECT_THROW(prompt("niah_single_1", 100), InputError);
  EXPECT_THROW(ruler::check_length(ruler::find_task("vt"), *tokenizer_, checkpoint_->config(), texts_, 512), InputError);
  EXPECT_NO_THROW(ruler::check_length(ruler::find_task("vt"), *tokenizer_, checkpoint_->config(), texts_, 1024));
}

// A chat tokenizer wraps the input as the user's turn; the answer prefix
// follows the assistant's header, as RULER's model templates put it.
TEST_F(RulerTasks, AChatPromptEndsWithTheAnswerPrefixAfterTheAssistantsHeader) {
  const auto chat = model::chat_tokenizer(model::open_tokenizer(KVSCOPE_ASSETS "/models/llama-debian-5m", checkpoint_->config().vocab),
                                          model::ChatFormat::chatml);
  const RulerPrompt p = ruler::ruler_prompt(ruler::find_task("niah_single_1"), *chat, checkpoint_->config(), texts_, 1024, seed_, 0);
  const std::vector<int32_t> prefix = tokenizer_->encode(p.answer_prefix);
  ASSERT_GT(p.tokens.size(), prefix.size());
  EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), p.tokens.end() - std::ptrdiff_t(prefix.size())));
  std::string before;
  for (auto t = p.tokens.begin() + 1; t != p.tokens.end() - std::ptrdiff_t(prefix.size()); ++t)
    before += tokenizer_->decode(*(t - 1), *t);
  EXPECT_EQ(before.rfind("<|im_start|>user\n", 0), 0u) << before.substr(0, 40);
  EXPECT_NE(before.find("<|im_start|>assistant\n"), std::string::npos);
}

// constants.py's string_match_all after evaluate.py's postprocess_pred.
TEST(RulerScoring, StringMatchAllOnHandMadePredictions) {
  EXPECT_EQ(ruler::string_match_all(" 4829173.", {"4829173"}), 1.0);
  EXPECT_EQ(ruler::string_match_all("The numbers are 11, 22", {"11", "22", "33", "44"}), 0.5);
  EXPECT_EQ(ruler::string_match_all("they are: ABCDE, FGHIJ", {"abcde", "fghij", "klmno"}), 2.0 / 3);
  EXPECT_EQ(ruler::string_match_all("nothing here", {"1234567"}), 0.0);
  EXPECT_EQ(ruler::string_match_all("", {"x"}), 0.0);
  EXPECT_EQ(ruler::string_match_all("1. Lantern 2. HARBOR", {"lantern", "harbor"}), 1.0);
  EXPECT_EQ(ruler::postprocess_prediction("  a\tb\x01" "c \n"), "a\nb\nc");
}

TEST(RulerWords, TheWordListKeepsLowercaseWordsOfThreeToTenLetters) {
  const std::string path = ::testing::TempDir() + "ruler_words.txt";
  {
    std::ofstream out(path);
    out << "ab\nabc\nAbcd\nabcd's\nabcdefghij\nabcdefghijk\n";
    for (int i = 0; i < 120; ++i) out << "w" << char('a' + i % 26) << char('a' + i / 26) << "\n";
  }
  const std::vector<std::string> words = ruler::read_word_list(path);
  EXPECT_EQ(words.size(), 122u);
  EXPECT_EQ(words[0], "abc");
  EXPECT_EQ(words[1], "abcdefghij");
  EXPECT_THROW(ruler::read_word_list(path + ".missing"), InputError);
}

}  // namespace
}  // namespace kv
