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
#include "model/gguf.h"
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

// A GGUF file's tokenizer (tokenizer.ggml.*) for the gpt2 and llama3
// variants, as llama.cpp's converter writes it: tokens by id (the added ones
// as control tokens), merges as "a b", the pre-tokenizer by name. Read back
// through gguf_tokenizer_json it gives Hugging Face's ids.
TEST(Tokenizer, GgufMetadataGivesHuggingFacesIds) {
  const nlohmann::json base = read_json(KVSCOPE_ASSETS "/models/llama-debian-5m/tokenizer.json");
  const nlohmann::json texts = read_json(KVSCOPE_TESTS "/data/tokenizer_texts.json");
  for (const auto& [name, pre] : {std::pair{"gpt2", "gpt-2"}, {"llama3", "llama-bpe"}}) {
    SCOPED_TRACE(name);
    const nlohmann::json j = variant(base, name);
    const nlohmann::json golden = read_json(KVSCOPE_TESTS "/data/tokenizer_golden.json")[name];
    std::vector<std::string> tokens(j["model"]["vocab"].size() + j["added_tokens"].size());
    std::vector<int32_t> types(tokens.size(), 1);
    for (const auto& [piece, id] : j["model"]["vocab"].items()) tokens[id.get<size_t>()] = piece;
    for (const nlohmann::json& t : j["added_tokens"]) {
      tokens[t["id"].get<size_t>()] = t["content"].get<std::string>();
      types[t["id"].get<size_t>()] = 3;
    }
    nlohmann::json merges = nlohmann::json::array();
    for (const nlohmann::json& m : j["model"]["merges"])
      merges.push_back(m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>());
    model::GgufFile f;
    f.metadata = {{"tokenizer.ggml.model", "gpt2"}, {"tokenizer.ggml.pre", pre}, {"tokenizer.ggml.tokens", tokens},
                  {"tokenizer.ggml.token_type", types}, {"tokenizer.ggml.merges", merges}};
    const auto tokenizer = model::parse_hf_tokenizer(model::gguf_tokenizer_json(f, "m.gguf"), "m.gguf");
    for (size_t i = 0; i < texts.size(); ++i)
      EXPECT_EQ(tokenizer->encode(texts[i].get<std::string>()), golden[i].get<std::vector<int32_t>>()) << "text " << i;
    f.metadata["tokenizer.ggml.pre"] = "default";
    EXPECT_THROW((void)model::gguf_tokenizer_json(f, "m.gguf"), InputError);
  }
}

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
