#include "model/gguf_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <unordered_map>

#include "base/error.h"
#include "model/config.h"
#include "model/split_patterns.h"

namespace kv::model {

using formats::GgmlType;
using formats::GgufFile;
using formats::GgufTensor;

ModelConfig gguf_model_config(const GgufFile& file, const std::string& source) {
  const nlohmann::json& m = file.metadata;
  auto fail = [&](const std::string& key, const std::string& what) {
    throw InputError(source + ": GGUF metadata " + key + ": " + what);
  };
  const std::string architecture = m.contains("general.architecture") && m["general.architecture"].is_string()
                                       ? m["general.architecture"].get<std::string>()
                                       : "";
  if (architecture != "llama") fail("general.architecture", "'" + architecture + "' is not read (llama)");
  // config.json's fields from the llama.* keys, for parse_hf_config to check.
  nlohmann::json c = {{"architectures", {"LlamaForCausalLM"}}};
  auto copy = [&](const char* key, const char* field, bool required) {
    if (m.contains(key)) c[field] = m[key];
    else if (required) fail(key, "missing");
  };
  copy("llama.embedding_length", "hidden_size", true);
  copy("llama.block_count", "num_hidden_layers", true);
  copy("llama.attention.head_count", "num_attention_heads", true);
  copy("llama.attention.head_count_kv", "num_key_value_heads", false);
  copy("llama.attention.key_length", "head_dim", false);
  copy("llama.feed_forward_length", "intermediate_size", true);
  copy("llama.context_length", "max_position_embeddings", true);
  copy("llama.attention.layer_norm_rms_epsilon", "rms_norm_eps", true);
  c["rope_theta"] = m.contains("llama.rope.freq_base") ? m["llama.rope.freq_base"] : nlohmann::json(10000.0);
  if (m.contains("llama.attention.key_length") && m.contains("llama.attention.value_length") &&
      m["llama.attention.key_length"] != m["llama.attention.value_length"])
    fail("llama.attention.value_length", "differs from key_length");
  const nlohmann::json& tokens = m.contains("tokenizer.ggml.tokens") ? m["tokenizer.ggml.tokens"] : nlohmann::json();
  if (tokens.is_array()) c["vocab_size"] = tokens.size();
  else copy("llama.vocab_size", "vocab_size", true);
  const std::string scaling = m.contains("llama.rope.scaling.type") && m["llama.rope.scaling.type"].is_string()
                                  ? m["llama.rope.scaling.type"].get<std::string>()
                                  : "none";
  if (scaling == "linear" || scaling == "yarn") {
    nlohmann::json rope = {{"rope_type", scaling}};
    if (!m.contains("llama.rope.scaling.factor")) fail("llama.rope.scaling.factor", "missing");
    rope["factor"] = m["llama.rope.scaling.factor"];
    if (m.contains("llama.rope.scaling.original_context_length"))
      rope["original_max_position_embeddings"] = m["llama.rope.scaling.original_context_length"];
    c["rope_scaling"] = rope;
  } else if (scaling != "none") {
    fail("llama.rope.scaling.type", "'" + scaling + "' is not read (none, linear, yarn)");
  }
  bool has_output = false;
  const GgufTensor* rope_freqs = nullptr;  // Llama 3's RoPE scaling: a divisor of each pair's frequency
  for (const GgufTensor& t : file.tensors) {
    has_output = has_output || t.name == "output.weight";
    if (t.name == "rope_freqs.weight") rope_freqs = &t;
  }
  c["tie_word_embeddings"] = !has_output;
  if (m.contains("tokenizer.ggml.bos_token_id")) c["bos_token_id"] = m["tokenizer.ggml.bos_token_id"];
  if (m.contains("tokenizer.ggml.eos_token_id")) c["eos_token_id"] = m["tokenizer.ggml.eos_token_id"];
  std::string text;
  try {
    text = c.dump();
  } catch (const nlohmann::json::exception&) {
    throw InputError(source + ": GGUF metadata holds text that is not UTF-8 where numbers belong");
  }
  ModelConfig config = parse_hf_config(text, source + " (its llama metadata as config.json fields)");
  if (m.contains("llama.rope.dimension_count") && m["llama.rope.dimension_count"] != config.head_dim)
    fail("llama.rope.dimension_count", "RoPE over part of a head is not supported");
  if (rope_freqs) {
    // llama.cpp divides each pair's angle by its factor, as Hugging Face's
    // llama3 rope_type divides the inverse frequency (the converter wrote
    // the factors from it).
    const size_t pairs = config.rope_inverse_frequencies.size();
    if (rope_freqs->type != GgmlType::f32 || rope_freqs->dims.size() != 1 || rope_freqs->dims[0] != pairs ||
        rope_freqs->data.size() != pairs * sizeof(float))
      throw InputError(source + ": GGUF tensor rope_freqs.weight: not " + std::to_string(pairs) + " F32 factors (head_dim / 2)");
    for (size_t i = 0; i < pairs; ++i) {
      float factor;
      std::memcpy(&factor, rope_freqs->data.data() + i * sizeof(float), sizeof factor);
      if (!(factor > 0) || !std::isfinite(factor))
        throw InputError(source + ": GGUF tensor rope_freqs.weight: factor " + std::to_string(i) + " is not a positive number");
      config.rope_inverse_frequencies[i] /= double(factor);
    }
  }
  config.rope_pairs = RopePairs::interleaved;
  return config;
}

namespace {

// The code points' byte offsets of a UTF-8 string (its end last): where a
// piece may be split in two, as Python splits a str.
std::vector<size_t> character_starts(const std::string& text) {
  std::vector<size_t> starts;
  for (size_t i = 0; i < text.size(); ++i)
    if ((uint8_t(text[i]) & 0xC0) != 0x80) starts.push_back(i);
  starts.push_back(text.size());
  return starts;
}

// A SentencePiece vocabulary's BPE merges as Hugging Face's converter
// derives them from the pieces' scores (transformers' SentencePieceExtractor):
// every split of a piece into two pieces of the vocabulary, a piece's splits
// ordered by their halves' ids, all of them by the piece's score, highest
// first (a stable sort).
nlohmann::json merges_from_scores(const std::vector<std::string>& pieces, const std::vector<float>& scores) {
  std::unordered_map<std::string, size_t> id_of;
  for (size_t id = 0; id < pieces.size(); ++id) id_of.emplace(pieces[id], id);
  struct Merge {
    size_t left, right;
    float score;
  };
  std::vector<Merge> merges;
  for (size_t id = 0; id < pieces.size(); ++id) {
    const std::string& piece = pieces[id];
    const std::vector<size_t> starts = character_starts(piece);
    std::vector<Merge> local;
    for (size_t k = 1; k + 1 < starts.size(); ++k) {
      const auto left = id_of.find(piece.substr(0, starts[k])), right = id_of.find(piece.substr(starts[k]));
      if (left != id_of.end() && right != id_of.end()) local.push_back({left->second, right->second, scores[id]});
    }
    std::sort(local.begin(), local.end(), [](const Merge& a, const Merge& b) {
      return a.left != b.left ? a.left < b.left : a.right < b.right;
    });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) { return a.score > b.score; });
  nlohmann::json out = nlohmann::json::array();
  for (const Merge& m : merges) out.push_back(pieces[m.left] + " " + pieces[m.right]);
  return out;
}

}  // namespace

std::string gguf_tokenizer_json(const GgufFile& file, const std::string& source) {
  const nlohmann::json& m = file.metadata;
  auto fail = [&](const std::string& key, const std::string& what) {
    throw InputError(source + ": GGUF metadata " + key + ": " + what);
  };
  if (!m.contains("tokenizer.ggml.model")) return "";
  const std::string kind = m["tokenizer.ggml.model"].is_string() ? m["tokenizer.ggml.model"].get<std::string>() : "";
  if (kind != "gpt2" && kind != "llama")
    fail("tokenizer.ggml.model", m["tokenizer.ggml.model"].dump() + " is not read (gpt2, llama)");
  const nlohmann::json& tokens = m.contains("tokenizer.ggml.tokens") ? m["tokenizer.ggml.tokens"] : nlohmann::json();
  const nlohmann::json& types = m.contains("tokenizer.ggml.token_type") ? m["tokenizer.ggml.token_type"] : nlohmann::json();
  if (!tokens.is_array()) fail("tokenizer.ggml.tokens", "missing");
  if (!types.is_null() && (!types.is_array() || types.size() != tokens.size()))
    fail("tokenizer.ggml.token_type", "not one type a token");
  // llama.cpp's token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 6 byte.
  auto type_of = [&](size_t id) -> int64_t { return types.is_null() ? 1 : types[id].is_number_integer() ? types[id].get<int64_t>() : -1; };
  for (const nlohmann::json& t : tokens)
    if (!t.is_string()) fail("tokenizer.ggml.tokens", "a token that is not text");
  nlohmann::json tokenizer;
  if (kind == "llama") {
    // SentencePiece-style BPE, as Hugging Face's converter writes Llama 2's
    // and Mistral's tokenizer.json: every piece in the vocabulary (control
    // ones also added tokens), merges from the scores, "▁" for spaces.
    const nlohmann::json& scores = m.contains("tokenizer.ggml.scores") ? m["tokenizer.ggml.scores"] : nlohmann::json();
    if (!scores.is_array() || scores.size() != tokens.size()) fail("tokenizer.ggml.scores", "not one score a token");
    std::vector<std::string> pieces;
    std::vector<float> score_of;
    nlohmann::json vocab = nlohmann::json::object(), added = nlohmann::json::array(), unk;
    for (size_t id = 0; id < tokens.size(); ++id) {
      if (!scores[id].is_number()) fail("tokenizer.ggml.scores", "a score that is not a number");
      pieces.push_back(tokens[id].get<std::string>());
      score_of.push_back(scores[id].get<float>());
      vocab[pieces.back()] = id;
      if (type_of(id) == 2 && unk.is_null()) unk = pieces.back();
      // The unknown piece is matched in text like the control ones, as Hugging Face's file lists it.
      if (type_of(id) >= 2 && type_of(id) <= 4)
        added.push_back({{"id", id}, {"content", pieces.back()}, {"special", type_of(id) != 4}});
    }
    const bool space_prefix = !m.contains("tokenizer.ggml.add_space_prefix") || m["tokenizer.ggml.add_space_prefix"] != false;
    nlohmann::json normalizers = nlohmann::json::array();
    if (space_prefix) normalizers.push_back({{"type", "Prepend"}, {"prepend", "\u2581"}});
    normalizers.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}});
    nlohmann::json decoders = {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                               {{"type", "ByteFallback"}},
                               {{"type", "Fuse"}}};
    if (space_prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    tokenizer = {{"model",
                  {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges_from_scores(pieces, score_of)}, {"byte_fallback", true},
                   {"fuse_unk", true}, {"unk_token", unk}}},
                 {"normalizer", {{"type", "Sequence"}, {"normalizers", normalizers}}},
                 {"pre_tokenizer", nullptr},
                 {"decoder", {{"type", "Sequence"}, {"decoders", decoders}}},
                 {"added_tokens", added}};
  } else {
    const std::string pre = m.contains("tokenizer.ggml.pre") && m["tokenizer.ggml.pre"].is_string()
                                ? m["tokenizer.ggml.pre"].get<std::string>()
                                : "";
    // The splits of llama.cpp's pre-tokenizer names, as tokenizer.json writes them.
    static const std::map<std::string, std::string> kSplits = {{"llama-bpe", kLlama3Split}, {"qwen2", kQwen2Split}};
    nlohmann::json pre_tokenizer;
    const nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}};
    if (pre == "gpt-2") {
      pre_tokenizer = byte_level;
      pre_tokenizer["use_regex"] = true;
    } else if (const auto split = kSplits.find(pre); split != kSplits.end()) {
      nlohmann::json bytes = byte_level;
      bytes["use_regex"] = false;
      pre_tokenizer = {{"type", "Sequence"},
                       {"pretokenizers",
                        {{{"type", "Split"}, {"pattern", {{"Regex", split->second}}}, {"behavior", "Isolated"}, {"invert", false}},
                         bytes}}};
    } else {
      fail("tokenizer.ggml.pre", "'" + pre + "' is not read (gpt-2, llama-bpe, qwen2)");
    }
    const nlohmann::json& merges = m.contains("tokenizer.ggml.merges") ? m["tokenizer.ggml.merges"] : nlohmann::json();
    if (!merges.is_array()) fail("tokenizer.ggml.merges", "missing");
    nlohmann::json vocab = nlohmann::json::object(), added = nlohmann::json::array();
    for (size_t id = 0; id < tokens.size(); ++id) {
      if (type_of(id) == 3 || type_of(id) == 4)
        added.push_back({{"id", id}, {"content", tokens[id]}, {"special", type_of(id) == 3}});
      else
        vocab[tokens[id].get<std::string>()] = id;
    }
    // Qwen's tokenizer.json normalizes to NFC, which the GGUF metadata does
    // not record: the pre-tokenizer's name stands for both.
    tokenizer = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"ignore_merges", pre == "llama-bpe"}}},
                 {"pre_tokenizer", pre_tokenizer},
                 {"decoder", {{"type", "ByteLevel"}}},
                 {"added_tokens", added}};
    if (pre == "qwen2") tokenizer["normalizer"] = {{"type", "NFC"}};
  }
  try {
    return tokenizer.dump();
  } catch (const nlohmann::json::exception&) {
    fail("tokenizer.ggml.tokens", "a token that is not UTF-8");
  }
  return "";
}

}  // namespace kv::model
