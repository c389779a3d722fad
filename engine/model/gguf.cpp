#include "model/gguf.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include <unicode/utf8.h>

#include "base/error.h"
#include "model/config.h"
#include "model/split_patterns.h"

namespace kv::model {
namespace {

// GGUF's metadata value types.
enum ValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9,
  kU64 = 10, kI64 = 11, kF64 = 12,
};

constexpr uint32_t kMaxDims = 4;
constexpr uint32_t kMaxArrayDepth = 2;  // an array of arrays at most (none in llama.cpp's files)

class Reader {
 public:
  Reader(std::span<const std::byte> bytes, const std::string& source) : bytes_(bytes), source_(source) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(source_ + ": GGUF " + what + " (at byte " + std::to_string(at_) + " of " + std::to_string(bytes_.size()) + ")");
  }
  size_t at() const { return at_; }
  size_t left() const { return bytes_.size() - at_; }
  template <typename T>
  T scalar(const char* what) {
    if (left() < sizeof(T)) fail(std::string("ends inside ") + what);
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  std::string text(const char* what) {
    const uint64_t length = scalar<uint64_t>(what);
    if (length > left()) fail(std::string(what) + " of " + std::to_string(length) + " bytes past the end");
    if (length > uint64_t(INT32_MAX)) fail(std::string(what) + " of " + std::to_string(length) + " bytes (2 GiB at most)");
    std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), size_t(length));
    // GGUF's strings are UTF-8; refused here, a bad byte would fail later in the JSON that carries the tokenizer and config.
    for (int32_t i = 0; i < int32_t(s.size());) {
      UChar32 c;
      U8_NEXT(s.data(), i, int32_t(s.size()), c);
      if (c < 0) fail(std::string(what) + " that is not UTF-8");
    }
    at_ += size_t(length);
    return s;
  }
  // A count of items each at least `least` bytes long, refused where the bytes left cannot hold them.
  uint64_t count(const char* what, uint64_t least) {
    const uint64_t n = scalar<uint64_t>(what);
    if (least > 0 && n > left() / least) fail(std::string(what) + " " + std::to_string(n) + " is more than the file holds");
    return n;
  }
  nlohmann::json value(uint32_t type, uint32_t depth) {
    switch (type) {
      case kU8: return scalar<uint8_t>("a value");
      case kI8: return scalar<int8_t>("a value");
      case kU16: return scalar<uint16_t>("a value");
      case kI16: return scalar<int16_t>("a value");
      case kU32: return scalar<uint32_t>("a value");
      case kI32: return scalar<int32_t>("a value");
      case kF32: return scalar<float>("a value");
      case kBool: {
        const uint8_t b = scalar<uint8_t>("a value");
        if (b > 1) fail("bool of " + std::to_string(b));
        return b == 1;
      }
      case kString: return text("a string");
      case kU64: return scalar<uint64_t>("a value");
      case kI64: return scalar<int64_t>("a value");
      case kF64: return scalar<double>("a value");
      case kArray: {
        if (depth >= kMaxArrayDepth) fail("arrays nested too deep");
        const uint32_t element = scalar<uint32_t>("an array's type");
        if (element > kF64) fail("array of unknown type " + std::to_string(element));
        const uint64_t n = count("array length", element == kU8 || element == kI8 || element == kBool ? 1 : 2);
        nlohmann::json array = nlohmann::json::array();
        for (uint64_t i = 0; i < n; ++i) array.push_back(value(element, depth + 1));
        return array;
      }
      default: fail("value of unknown type " + std::to_string(type));
    }
  }
  void skip_to(size_t offset) { at_ = offset; }

 private:
  std::span<const std::byte> bytes_;
  const std::string& source_;
  size_t at_ = 0;
};

// Bytes of a tensor of `elements` (row length dims[0]) of `type`: whole blocks a row.
uint64_t tensor_bytes(GgufType type, uint64_t elements, uint64_t row, Reader& r, const std::string& name) {
  const formats::BlockLayout layout = *formats::block_layout(uint32_t(type));
  if (row % layout.elements)
    r.fail("tensor " + name + ": a " + layout.name + " row of " + std::to_string(row) + " is not whole blocks of " +
           std::to_string(layout.elements));
  return elements / layout.elements * layout.bytes;
}

}  // namespace

GgufFile parse_gguf(std::span<const std::byte> bytes, const std::string& source) {
  Reader r(bytes, source);
  if (bytes.size() < 4 || std::memcmp(bytes.data(), "GGUF", 4) != 0) r.fail("magic missing: not a GGUF file");
  r.skip_to(4);
  GgufFile file;
  file.version = r.scalar<uint32_t>("the version");
  if (file.version != 2 && file.version != 3) r.fail("version " + std::to_string(file.version) + " (2 and 3 are read)");
  // A tensor's entry is at least 8 + 4 + 8 + 4 + 8 bytes, a metadata entry 8 + 4 + 1.
  const uint64_t n_tensors = r.count("tensor count", 32), n_metadata = r.count("metadata count", 13);
  file.metadata = nlohmann::json::object();
  for (uint64_t i = 0; i < n_metadata; ++i) {
    const std::string key = r.text("a metadata key");
    const uint32_t type = r.scalar<uint32_t>("a metadata type");
    if (file.metadata.contains(key)) r.fail("metadata key '" + key + "' twice");
    file.metadata[key] = r.value(type, 0);
  }
  if (file.metadata.contains("general.alignment")) {
    const nlohmann::json& a = file.metadata["general.alignment"];
    if (!a.is_number_unsigned() || a.get<uint64_t>() == 0 || a.get<uint64_t>() > 4096 || (a.get<uint64_t>() & (a.get<uint64_t>() - 1)))
      r.fail("general.alignment must be a power of two up to 4096, not " + a.dump());
    file.alignment = a.get<uint32_t>();
  }
  struct Entry {
    std::string name;
    std::vector<uint64_t> dims;
    GgufType type;
    uint64_t offset;
  };
  std::vector<Entry> entries;
  std::set<std::string> names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    Entry e;
    e.name = r.text("a tensor name");
    if (!names.insert(e.name).second) r.fail("tensor '" + e.name + "' twice");
    const uint32_t n_dims = r.scalar<uint32_t>("a tensor's dimensions");
    if (n_dims == 0 || n_dims > kMaxDims) r.fail("tensor " + e.name + ": " + std::to_string(n_dims) + " dimensions (1 to 4)");
    for (uint32_t d = 0; d < n_dims; ++d) e.dims.push_back(r.scalar<uint64_t>("a tensor's dimension"));
    const uint32_t type = r.scalar<uint32_t>("a tensor's type");
    if (!formats::block_layout(type))
      r.fail("tensor " + e.name + ": type " + formats::ggml_type_name(type) +
             " is not read (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K)");
    e.type = GgufType(type);
    e.offset = r.scalar<uint64_t>("a tensor's offset");
    entries.push_back(std::move(e));
  }
  const uint64_t data_start = (uint64_t(r.at()) + file.alignment - 1) / file.alignment * file.alignment;
  if (data_start > bytes.size() && n_tensors > 0) r.fail("tensor data start past the end");
  const uint64_t data_bytes = bytes.size() > data_start ? bytes.size() - data_start : 0;
  for (const Entry& e : entries) {
    uint64_t elements = 1;
    // At most four values a byte (Q2_K stores 3.05): a bound that keeps the product in range.
    const uint64_t most = data_bytes * 4;
    for (uint64_t d : e.dims) {
      if (d == 0 || elements > most / d) r.fail("tensor " + e.name + ": more elements than the file holds");
      elements *= d;
    }
    const uint64_t size = tensor_bytes(e.type, elements, e.dims[0], r, e.name);
    if (e.offset % file.alignment) r.fail("tensor " + e.name + ": offset " + std::to_string(e.offset) + " is not aligned");
    if (e.offset > data_bytes || size > data_bytes - e.offset)
      r.fail("tensor " + e.name + ": bytes " + std::to_string(e.offset) + " to " + std::to_string(e.offset + size) +
             " past the data's " + std::to_string(data_bytes));
    file.tensors.push_back({e.name, e.dims, e.type, bytes.subspan(size_t(data_start + e.offset), size_t(size))});
  }
  return file;
}

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
    if (rope_freqs->type != GgufType::f32 || rope_freqs->dims.size() != 1 || rope_freqs->dims[0] != pairs ||
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
