// The C++ tokenizers (engine/model/tokenizer.h) against Hugging Face
// `tokenizers`: tests/data/tokenizer_golden.json holds the ids it gave for
// tests/data/tokenizer_texts.json, for three pre-tokenizers derived from the
// bundled llama-debian-5m tokenizer.json exactly as variant() derives them here
// (tools/dev/tokenizer_golden.py wrote the file on the GPU machine, where
// `tokenizers` 0.23 is installed).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "error.h"
#include "model/tokenizer.h"

namespace kv {
namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

const char* const kLlama3Split =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// tools/dev/tokenizer_golden.py's variant(), in C++.
nlohmann::json variant(nlohmann::json j, const std::string& name) {
  if (name == "gpt2") {
    j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  } else if (name == "llama3") {
    j["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", kLlama3Split}}}, {"behavior", "Isolated"}, {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
    j["model"]["ignore_merges"] = true;
  }
  const size_t vocab = j["model"]["vocab"].size();
  int i = 0;
  for (const char* content : {"<|user|>", "<|assistant|>"})
    j["added_tokens"].push_back({{"id", vocab + i++}, {"content", content}, {"single_word", false}, {"lstrip", false},
                                 {"rstrip", false}, {"normalized", false}, {"special", true}});
  return j;
}

class TokenizerGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerGolden, MatchesHuggingFaceIds) {
  const nlohmann::json base = read_json(KVSCOPE_ASSETS "/models/llama-debian-5m/tokenizer.json");
  const nlohmann::json texts = read_json(KVSCOPE_TESTS "/data/tokenizer_texts.json");
  const nlohmann::json golden = read_json(KVSCOPE_TESTS "/data/tokenizer_golden.json")[GetParam()];
  const auto tokenizer = model::parse_hf_tokenizer(variant(base, GetParam()).dump(), GetParam());
  ASSERT_EQ(texts.size(), golden.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string text = texts[i].get<std::string>();
    EXPECT_EQ(tokenizer->encode(text), golden[i].get<std::vector<int32_t>>()) << "text " << i << ": " << text;
    std::string decoded;
    int32_t previous = -1;
    for (int32_t id : tokenizer->encode(text)) decoded += tokenizer->decode(std::exchange(previous, id), id);
    EXPECT_EQ(decoded, text) << "text " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, TokenizerGolden, ::testing::Values("digits_bytelevel", "gpt2", "llama3"));

TEST(Tokenizer, RefusesWhatItCannotRead) {
  const nlohmann::json base = read_json(KVSCOPE_ASSETS "/models/llama-debian-5m/tokenizer.json");
  auto refused = [&](nlohmann::json j, const std::string& words) {
    try {
      model::parse_hf_tokenizer(j.dump(), "t");
      ADD_FAILURE() << "accepted: " << words;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  nlohmann::json j = base;
  j["normalizer"] = {{"type", "NFC"}};
  refused(j, "normalizer");
  j = base;
  j["model"]["type"] = "WordPiece";
  refused(j, "model.type");
  j = base;
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  refused(j, "pre_tokenizer");
  j = base;
  j["model"]["merges"] = {"a b c"};
  refused(j, "model.merges");
  EXPECT_THROW(model::parse_hf_tokenizer("{", "t"), InputError);
  EXPECT_THROW(model::parse_hf_tokenizer("[]", "t"), InputError);
}

TEST(Tokenizer, Llama2cRoundTripAndRefusals) {
  std::ifstream in(KVSCOPE_ASSETS "/models/stories260K/tok512.bin", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto tokenizer = model::parse_llama2c_tokenizer(bytes, 512, "tok512");
  const std::string text = "Once upon a time, Lily saw a big red ball. Café 123!";
  std::string decoded;
  int32_t previous = 1;  // after BOS, as generation starts
  for (int32_t id : tokenizer->encode(text)) decoded += tokenizer->decode(std::exchange(previous, id), id);
  EXPECT_EQ(decoded, text);
  EXPECT_TRUE(tokenizer->encode("").empty());
  EXPECT_THROW(model::parse_llama2c_tokenizer(bytes.substr(0, bytes.size() - 3), 512, "t"), InputError);
  EXPECT_THROW(model::parse_llama2c_tokenizer(bytes, 513, "t"), InputError);
  EXPECT_THROW(model::parse_llama2c_tokenizer(bytes, 400, "t"), InputError);  // bytes left over
  std::string hostile = bytes;
  const int32_t huge = 1 << 30;
  std::memcpy(hostile.data() + 8, &huge, 4);  // the first token's length
  EXPECT_THROW(model::parse_llama2c_tokenizer(hostile, 512, "t"), InputError);
}

}  // namespace
}  // namespace kv
