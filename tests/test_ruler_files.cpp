// RULER's own files and metrics (engine/ruler/ruler_files.h) against
// NVIDIA/RULER's scripts/eval/synthetic/constants.py (string_match_all,
// string_match_part) and scripts/eval/evaluate.py (postprocess_pred) on
// hand-made predictions, and the reader on tests/data/ruler (made here in
// prepare.py's layout) and on broken files. No GPU.
#include <gtest/gtest.h>

#include <fstream>

#include "base/error.h"
#include "ruler/ruler_files.h"
#include "temp_files.h"

namespace kv {
namespace {

using ruler::RulerMetric;

const std::filesystem::path kData = KVSCOPE_TESTS "/data/ruler";

// Each value worked by hand: sum over references of (r.lower() in pred.lower()) / len(refs).
TEST(RulerMetrics, StringMatchAllIsTheShareOfReferencesFound) {
  EXPECT_EQ(ruler::string_match_all("The special magic number is 4829173.", {"4829173"}), 1.0);
  EXPECT_EQ(ruler::string_match_all("QPE, zuk and ABC", {"QPE", "ZUK", "HMD", "RVA"}), 0.5);
  EXPECT_EQ(ruler::string_match_all("lantern harbor", {"lantern", "harbor", "meadow"}), 2.0 / 3);
  EXPECT_EQ(ruler::string_match_all("", {"x"}), 0.0);
  // A substring, not a word: "482917" is in "4829173".
  EXPECT_EQ(ruler::string_match_all("4829173", {"482917"}), 1.0);
  // Nothing is cut at a newline: a reference on the second line counts.
  EXPECT_EQ(ruler::string_match_all("first line\nthe answer is 77", {"77"}), 1.0);
  // Control characters become newlines, so a reference spanning one is not found.
  EXPECT_EQ(ruler::string_match_all("ab\tcd", {"ab\tcd"}), 0.0);
  EXPECT_EQ(ruler::string_match_all("ab\tcd", {"ab\ncd"}), 1.0);
}

// max over references of (r.lower() in pred.lower()).
TEST(RulerMetrics, StringMatchPartIsWhetherAnyReferenceIsFound) {
  EXPECT_EQ(ruler::string_match_part(" Calder Bay.", {"Calder Bay", "at Calder Bay"}), 1.0);
  EXPECT_EQ(ruler::string_match_part("the ASHBY brothers", {"the Ashby family", "Ashby"}), 1.0);
  EXPECT_EQ(ruler::string_match_part("Marrow", {"Calder Bay", "Wend"}), 0.0);
  EXPECT_EQ(ruler::string_match_part("", {"x", "y"}), 0.0);
  // The same prediction by the two metrics: 1 of 2 found.
  EXPECT_EQ(ruler::ruler_score(RulerMetric::string_match_part, "Ashby", {"the Ashby family", "Ashby"}), 1.0);
  EXPECT_EQ(ruler::ruler_score(RulerMetric::string_match_all, "Ashby", {"the Ashby family", "Ashby"}), 0.5);
}

// Python's str.lower, not only ASCII: SQuAD's and HotpotQA's answers have accents.
TEST(RulerMetrics, CaseIsIgnoredBeyondAscii) {
  EXPECT_EQ(ruler::lowercase("BEYONCÉ Ÿ ĀĹŊŹ ΑΩΆ ЖЁ 東京 abc"), "beyoncé ÿ āĺŋź αωά жё 東京 abc");
  EXPECT_EQ(ruler::string_match_part("beyoncé", {"BEYONCÉ"}), 1.0);
  EXPECT_EQ(ruler::lowercase(std::string("a\xff" "B")), std::string("a\xff" "b"));
  EXPECT_EQ(ruler::postprocess_prediction("  a\tb\x01" "c \n"), "a\nb\nc");
  EXPECT_EQ(ruler::postprocess_prediction("\x1f x \x1c"), "x");
}

TEST(RulerMetrics, TaskSettingsFollowRulersConstants) {
  uint32_t tokens = 0;
  RulerMetric metric{};
  const std::vector<std::tuple<std::string, uint32_t, RulerMetric>> expected = {
      {"niah_multikey_3", 128, RulerMetric::string_match_all}, {"vt", 30, RulerMetric::string_match_all},
      {"cwe", 120, RulerMetric::string_match_all},             {"fwe", 50, RulerMetric::string_match_all},
      {"qa_1", 32, RulerMetric::string_match_part},            {"qa_2", 32, RulerMetric::string_match_part}};
  for (const auto& [task, t, m] : expected) {
    ASSERT_TRUE(ruler::ruler_task_settings(task, tokens, metric)) << task;
    EXPECT_EQ(tokens, t) << task;
    EXPECT_EQ(metric, m) << task;
  }
  EXPECT_FALSE(ruler::ruler_task_settings("summaries", tokens, metric));
}

TEST(RulerFiles, TheTestFolderIsReadInRulersOrder) {
  EXPECT_EQ(ruler::ruler_data_tasks(kData), (std::vector<std::string>{"niah_single_1", "vt", "qa_1"}));
  const ruler::RulerTaskFile qa = ruler::read_ruler_task(kData, "qa_1");
  ASSERT_EQ(qa.records.size(), 2u);
  EXPECT_EQ(qa.metric, RulerMetric::string_match_part);
  EXPECT_EQ(qa.tokens_to_generate, 32u);
  EXPECT_EQ(qa.records[0].answer_prefix, " Answer:");
  EXPECT_EQ(qa.records[1].answer_prefix, "");  // optional
  EXPECT_EQ(qa.records[1].outputs, (std::vector<std::string>{"the Ashby family", "Ashby"}));
  EXPECT_EQ(qa.records[1].index, 1);
  EXPECT_EQ(qa.records[1].line, 2u);
  EXPECT_EQ(qa.longest(), 100u);
  EXPECT_EQ(qa.records[0].input.rfind("Answer the question based on the given documents.", 0), 0u);
  const ruler::RulerTaskFile vt = ruler::read_ruler_task(kData, "vt", 1);  // the first record only
  ASSERT_EQ(vt.records.size(), 1u);
  EXPECT_EQ(vt.records[0].outputs, (std::vector<std::string>{"QPE", "ZUK"}));
}

// Each bad file: InputError naming the file and the line, in one line.
TEST(RulerFiles, BrokenFilesAreRefusedNamingFileAndLine) {
  const std::filesystem::path dir = test::temp_path("ruler_broken");
  const std::string good = R"({"index": 0, "input": "x", "outputs": ["1"], "length": 5})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {good + "\n{not json\n", "line 2: not JSON"},
      {good + "\n" + R"({"index": 1, "outputs": ["1"]})" + "\n", "line 2: no 'input'"},
      {R"({"index": 0, "input": "x"})" "\n", "line 1: no 'outputs'"},
      {R"({"input": "x", "outputs": []})" "\n", "line 1: 'outputs' is not a non-empty list"},
      {R"({"input": "x", "outputs": [1]})" "\n", "line 1: 'outputs' holds something other than a string"},
      {R"({"input": 3, "outputs": ["1"]})" "\n", "line 1: 'input' is not a string"},
      {good + "\n\n[1, 2]\n", "line 3: not a JSON object"},
      {"\n", "validation.jsonl: no record"},
      {std::string("{\"input\": \"\xff\", \"outputs\": [\"1\"]}\n"), "line 1: not JSON"}};
  for (const auto& [text, message] : cases) {
    std::filesystem::create_directories(dir / "niah_single_1");
    std::ofstream(dir / "niah_single_1" / "validation.jsonl", std::ios::binary) << text;
    try {
      ruler::read_ruler_task(dir, "niah_single_1");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find((dir / "niah_single_1" / "validation.jsonl").string()), std::string::npos) << what;
      EXPECT_NE(what.find(message), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_EQ(e.setting, "data");
    }
  }
  EXPECT_THROW(ruler::read_ruler_task(dir, "qa_2"), InputError);       // no such file
  EXPECT_THROW(ruler::read_ruler_task(dir, "summaries"), InputError);  // not a RULER task
  EXPECT_THROW(ruler::ruler_data_tasks(dir / "absent"), InputError);
  EXPECT_THROW(ruler::ruler_data_tasks(dir / "niah_single_1"), InputError);  // a folder without task folders
}

}  // namespace
}  // namespace kv
