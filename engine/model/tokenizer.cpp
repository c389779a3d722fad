#include "model/tokenizer.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <queue>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/utf8.h>

#include "base/error.h"
#include "model/files.h"
#include "model/split_patterns.h"

namespace kv::model {
namespace {

// ---------------------------------------------------------------- code points

// The regex classes of the split patterns, from ICU's character database:
// \p{L} and \p{N} are general categories, \s is Unicode's White_Space.
bool is_letter(uint32_t cp) { return (U_GET_GC_MASK(UChar32(cp)) & U_GC_L_MASK) != 0; }
bool is_number(uint32_t cp) { return (U_GET_GC_MASK(UChar32(cp)) & U_GC_N_MASK) != 0; }
bool is_space(uint32_t cp) { return u_isUWhiteSpace(UChar32(cp)); }
bool is_other(uint32_t cp) { return !is_letter(cp) && !is_number(cp) && !is_space(cp); }
bool is_newline(uint32_t cp) { return cp == '\r' || cp == '\n'; }

// A text's code points with the byte where each starts; a byte that is not
// valid UTF-8 stands for itself (as a code point no category holds).
struct CodePoints {
  std::vector<uint32_t> cp;
  std::vector<size_t> start;  // cp.size() + 1 entries: the last is the text's end
};

CodePoints code_points(std::string_view text) {
  CodePoints out;
  size_t i = 0;
  while (i < text.size()) {
    const auto b = uint8_t(text[i]);
    const size_t length = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    uint32_t cp = b;
    bool valid = length > 0 && i + length <= text.size();
    if (valid && length > 1) {
      cp = b & (0xff >> (length + 1));
      for (size_t k = 1; k < length; ++k) {
        const auto c = uint8_t(text[i + k]);
        valid &= (c >> 6) == 2;
        cp = (cp << 6) | (c & 0x3f);
      }
    }
    out.cp.push_back(valid ? cp : 0xDC00u + b);  // a lone surrogate's value: no category holds it
    out.start.push_back(i);
    i += valid ? length : 1;
  }
  out.start.push_back(text.size());
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3f));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  }
}

// ---------------------------------------------------------------- pre-tokenizers

enum class SplitPattern { none, gpt2, llama3, qwen2 };

// One split of the text at code point i: the end of the match (in code points).
// GPT-2's pattern: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// Llama 3's: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// Qwen2's and Qwen3's: Llama 3's with \p{N} (one digit a piece) for \p{N}{1,3}.
size_t next_split(const std::vector<uint32_t>& c, size_t i, SplitPattern pattern) {
  const size_t n = c.size();
  auto run = [&](size_t j, bool (*test)(uint32_t), size_t most = SIZE_MAX) {
    size_t k = j;
    while (k < n && k - j < most && test(c[k])) ++k;
    return k;
  };
  const bool fold = pattern == SplitPattern::llama3 || pattern == SplitPattern::qwen2;
  auto lower = [&](uint32_t x) { return fold && x < 128 ? uint32_t(std::tolower(int(x))) : x; };
  if (c[i] == '\'' && i + 1 < n) {  // contractions
    const uint32_t a = lower(c[i + 1]), b = i + 2 < n ? lower(c[i + 2]) : 0;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
  }
  const bool spaced = c[i] == ' ' && i + 1 < n;
  if (pattern == SplitPattern::gpt2) {
    for (bool (*test)(uint32_t) : {is_letter, is_number, is_other}) {
      if (test(c[i])) return run(i, test);
      if (spaced && test(c[i + 1])) return run(i + 1, test);
    }
  } else {
    if (is_letter(c[i])) return run(i, is_letter);
    if (!is_newline(c[i]) && !is_letter(c[i]) && !is_number(c[i]) && i + 1 < n && is_letter(c[i + 1]))
      return run(i + 1, is_letter);
    if (is_number(c[i])) return run(i, is_number, pattern == SplitPattern::qwen2 ? 1 : 3);
    const size_t others = is_other(c[i]) ? i : spaced && is_other(c[i + 1]) ? i + 1 : n;
    if (others < n) return run(run(others, is_other), is_newline);
    if (is_space(c[i])) {  // \s*[\r\n]+: up to the whitespace run's last newline
      const size_t end = run(i, is_space);
      for (size_t k = end; k > i; --k)
        if (is_newline(c[k - 1])) return k;
    }
  }
  // \s+(?!\S), then \s+
  const size_t end = run(i, is_space);
  if (end == n || end - i == 1) return end;
  return end - 1;
}

// ---------------------------------------------------------------- byte-level BPE

// GPT-2's bytes_to_unicode: printable bytes stand for themselves, the others
// for code points from 256 on, in byte order.
std::array<uint32_t, 256> byte_to_code_point() {
  std::array<uint32_t, 256> table{};
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    table[b] = printable ? b : next++;
  }
  return table;
}

// Unicode normalization (NFC, NFKC) through ICU; text that is not UTF-8 has
// its bad bytes replaced by U+FFFD on the way, as a Python str cannot hold them.
std::string normalize_unicode(std::string_view text, bool compatibility) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* normalizer =
      compatibility ? icu::Normalizer2::getNFKCInstance(status) : icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU's normalizer: ") + u_errorName(status));
  const icu::UnicodeString normalized =
      normalizer->normalize(icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), int32_t(text.size()))), status);
  if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU's normalizer: ") + u_errorName(status));
  std::string out;
  normalized.toUTF8String(out);
  return out;
}

void replace_all(std::string& text, const std::string& pattern, const std::string& content) {
  if (pattern.empty()) return;
  for (size_t at = text.find(pattern); at != std::string::npos; at = text.find(pattern, at + content.size()))
    text.replace(at, pattern.size(), content);
}

// The byte of a byte-fallback piece "<0xNN>", or -1.
int fallback_byte(const std::string& piece) {
  unsigned byte = 0;
  char tail = 0;
  if (piece.size() == 6 && std::sscanf(piece.c_str(), "<0x%02X%c", &byte, &tail) == 2 && tail == '>') return int(byte);
  return -1;
}

// The pair of neighbours that `judge` ranks first merged into one symbol,
// again and again until judge takes no pair (judge(a, b): the merge's
// priority, higher first, the leftmost of equal ones, and the merged symbol;
// or nothing), in O(n log n): a heap of candidate pairs over a linked list, a
// pair dropped when either side has changed. Hugging Face's BPE (the lowest
// merge rank first) and llama2c's (the best score first) both; a
// SentencePiece-style tokenizer has no pre-tokenizer, so a whole document can
// be one word, and ppl's documents took minutes the quadratic way.
template <typename Symbol, typename Judge>
std::vector<Symbol> merge_pairs(std::vector<Symbol> symbols, Judge judge) {
  const size_t n = symbols.size();
  std::vector<size_t> next(n), prev(n);
  std::vector<uint32_t> version(n, 0);
  std::vector<bool> alive(n, true);
  for (size_t k = 0; k < n; ++k) next[k] = k + 1, prev[k] = k - 1;  // prev[0] wraps: never read while alive
  struct Pair {
    double priority;
    size_t left, right;
    uint32_t left_version, right_version;
    Symbol merged;
    bool operator<(const Pair& o) const { return priority < o.priority || (priority == o.priority && left > o.left); }
  };
  std::priority_queue<Pair> heap;
  auto consider = [&](size_t left) {
    if (left >= n || next[left] >= n) return;
    const size_t right = next[left];
    if (auto merge = judge(symbols[left], symbols[right]))
      heap.push({merge->first, left, right, version[left], version[right], std::move(merge->second)});
  };
  for (size_t k = 0; k + 1 < n; ++k) consider(k);
  while (!heap.empty()) {
    Pair p = heap.top();
    heap.pop();
    if (!alive[p.left] || !alive[p.right] || next[p.left] != p.right || version[p.left] != p.left_version ||
        version[p.right] != p.right_version)
      continue;
    symbols[p.left] = std::move(p.merged);
    ++version[p.left];
    alive[p.right] = false;
    next[p.left] = next[p.right];
    if (next[p.right] < n) prev[next[p.right]] = p.left;
    if (p.left > 0 && alive[prev[p.left]]) consider(prev[p.left]);
    consider(p.left);
  }
  std::vector<Symbol> merged;
  for (size_t k = 0; k < n; k = next[k]) merged.push_back(std::move(symbols[k]));
  return merged;
}

// A tokenizer.json of BPE, in either of its two kinds: byte-level (GPT-2,
// Llama 3, Qwen: a ByteLevel step maps bytes to printable code points, a
// split pattern cuts words) or SentencePiece-style (Llama 2, Mistral:
// normalizers put "▁" for spaces, no pre-tokenizer, pieces are characters,
// and a character without a piece falls back to its bytes' "<0xNN>" pieces).
// Added tokens are matched in the raw text first; the normalizers and the
// model see the text between them.
class HfTokenizer final : public Tokenizer {
 public:
  HfTokenizer(const nlohmann::json& j, const std::string& source) : source_(source) {
    auto fail = [&](const std::string& field, const std::string& what) -> void {
      throw InputError(source + ": " + field + ": " + what);
    };
    if (!j.is_object()) fail("(top level)", "not a JSON object");
    if (!j.contains("model") || !j["model"].is_object()) fail("model", "missing");
    const nlohmann::json& model = j["model"];
    if (model.value("type", "") != "BPE") fail("model.type", "'" + model.value("type", std::string("?")) + "' is not supported (BPE)");
    for (const char* field : {"continuing_subword_prefix", "end_of_word_suffix", "dropout"})
      if (model.contains(field) && !model[field].is_null() && !(model[field].is_string() && model[field].get<std::string>().empty()))
        fail(std::string("model.") + field, "is not supported");
    byte_fallback_ = model.value("byte_fallback", false);
    fuse_unk_ = model.value("fuse_unk", false);
    ignore_merges_ = model.value("ignore_merges", false);
    if (!model.contains("vocab") || !model["vocab"].is_object()) fail("model.vocab", "missing");
    for (const auto& [piece, id] : model["vocab"].items()) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (1 << 24))
        fail("model.vocab." + piece, "not a token id");
      vocab_[piece] = int32_t(id.get<int64_t>());
      vocab_size_ = std::max<uint32_t>(vocab_size_, uint32_t(id.get<int64_t>()) + 1);
    }
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
      const auto unk = vocab_.find(model["unk_token"].get<std::string>());
      if (unk == vocab_.end()) fail("model.unk_token", "is not in the vocabulary");
      unk_id_ = unk->second;
    }
    if (!model.contains("merges") || !model["merges"].is_array()) fail("model.merges", "missing");
    int32_t rank = 0;
    for (const nlohmann::json& m : model["merges"]) {
      std::string pair;
      if (m.is_string()) {
        pair = m.get<std::string>();
        if (std::count(pair.begin(), pair.end(), ' ') != 1) fail("model.merges", "'" + pair + "' is not two pieces");
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        pair = m[0].get<std::string>() + " " + m[1].get<std::string>();
      } else {
        fail("model.merges", "an entry is neither \"a b\" nor [a, b]");
      }
      merge_rank_.emplace(pair, rank++);
    }
    read_normalizer(j.contains("normalizer") ? j["normalizer"] : nlohmann::json(), fail);
    read_pre_tokenizer(j.contains("pre_tokenizer") ? j["pre_tokenizer"] : nlohmann::json(), fail);
    read_decoder(j.contains("decoder") ? j["decoder"] : nlohmann::json(), fail);
    if (byte_level_ && byte_fallback_) fail("model.byte_fallback", "is not supported with a ByteLevel pre-tokenizer");
    if (j.contains("added_tokens")) {
      if (!j["added_tokens"].is_array()) fail("added_tokens", "not an array");
      for (const nlohmann::json& t : j["added_tokens"]) {
        if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || !t.contains("content") ||
            !t["content"].is_string() || t["content"].get<std::string>().empty())
          fail("added_tokens", "an entry without id and content");
        if (t.value("single_word", false)) fail("added_tokens", "single_word tokens are not supported");
        if (t.value("normalized", false) && !normalizers_.empty())
          fail("added_tokens", "'" + t["content"].get<std::string>() + "' is matched in normalized text, which is not supported");
        const int64_t id = t["id"].get<int64_t>();
        if (id < 0 || id >= (1 << 24)) fail("added_tokens", "id " + std::to_string(id) + " is out of range");
        added_.push_back({t["content"].get<std::string>(), int32_t(id), t.value("lstrip", false), t.value("rstrip", false)});
        vocab_size_ = std::max<uint32_t>(vocab_size_, uint32_t(id) + 1);
      }
    }
    // Longest first, so that at one position the longest added token wins.
    std::stable_sort(added_.begin(), added_.end(), [](const Added& a, const Added& b) { return a.content.size() > b.content.size(); });
    for (const Added& a : added_) added_text_[a.id] = a.content;
    for (const auto& [piece, id] : vocab_) text_of_.emplace(id, piece);
    byte_cp_ = byte_to_code_point();
    for (uint32_t b = 0; b < 256; ++b) cp_byte_[byte_cp_[b]] = uint8_t(b);
    if (byte_fallback_)
      for (uint32_t b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        const auto it = vocab_.find(name);
        byte_piece_[b] = it == vocab_.end() ? -1 : it->second;
      }
  }

  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> ids;
    size_t i = 0;
    while (i < text.size()) {
      // The earliest added token from i (the longest there), else the rest of the text.
      size_t best = text.size();
      const Added* found = nullptr;
      for (const Added& a : added_) {
        const size_t at = text.find(a.content, i);
        if (at < best) best = at, found = &a;
      }
      size_t plain_end = best;
      if (found && found->lstrip)
        while (plain_end > i && std::isspace(uint8_t(text[plain_end - 1]))) --plain_end;
      encode_plain(normalized(text.substr(i, plain_end - i)), ids);
      if (!found) break;
      ids.push_back(found->id);
      i = best + found->content.size();
      if (found->rstrip)
        while (i < text.size() && std::isspace(uint8_t(text[i]))) ++i;
    }
    return ids;
  }

  std::string decode(int32_t previous, int32_t token) const override {
    if (const auto added = added_text_.find(token); added != added_text_.end()) return added->second;
    // An id the model has and the tokenizer lacks (Qwen's padding rows past
    // its last added token) adds no text, as tokenizers' decode skips it.
    const auto it = text_of_.find(token);
    if (it == text_of_.end()) return "";
    if (!byte_level_) {  // the SentencePiece-style decoders: Replace, ByteFallback, Fuse, Strip
      if (const int byte = fallback_byte(it->second); byte >= 0 && decode_byte_fallback_) return std::string(1, char(byte));
      std::string text = it->second;
      for (const auto& [pattern, content] : decode_replacements_) replace_all(text, pattern, content);
      if (previous < 0)  // Strip acts on the fused text: its start is the first token's
        for (uint32_t k = 0; k < strip_start_ && !text.empty() && text.compare(0, strip_content_.size(), strip_content_) == 0; ++k)
          text.erase(0, strip_content_.size());
      return text;
    }
    std::string bytes;
    const CodePoints cps = code_points(it->second);
    for (size_t k = 0; k < cps.cp.size(); ++k) {
      const auto byte = cp_byte_.find(cps.cp[k]);
      if (byte != cp_byte_.end()) bytes += char(byte->second);
      else bytes.append(it->second, cps.start[k], cps.start[k + 1] - cps.start[k]);
    }
    return bytes;
  }

  uint32_t vocab_size() const override { return vocab_size_; }

 private:
  struct Added {
    std::string content;
    int32_t id;
    bool lstrip, rstrip;
  };
  struct Normalizer {
    enum Kind { nfc, nfkc, prepend, replace } kind;
    std::string a, b;  // prepend: a; replace: a -> b
  };

  // A component's steps (normalizer, pre-tokenizer, decoder): the items of a
  // Sequence (under `items`), else the component itself; none where it is null.
  static std::vector<nlohmann::json> steps_of(const nlohmann::json& component, const char* items) {
    if (component.is_null()) return {};
    if (step_type(component) == "Sequence" && component.contains(items) && component[items].is_array())
      return component[items].get<std::vector<nlohmann::json>>();
    return {component};
  }
  // A step's type, "" where it is not an object.
  static std::string step_type(const nlohmann::json& step) { return step.is_object() ? step.value("type", "") : ""; }

  template <typename Fail>
  void read_normalizer(const nlohmann::json& n, Fail fail) {
    for (const nlohmann::json& s : steps_of(n, "normalizers")) {
      const std::string type = step_type(s);
      if (type == "NFC") {
        normalizers_.push_back({Normalizer::nfc, "", ""});
      } else if (type == "NFKC") {
        normalizers_.push_back({Normalizer::nfkc, "", ""});
      } else if (type == "Prepend" && s.contains("prepend") && s["prepend"].is_string()) {
        normalizers_.push_back({Normalizer::prepend, s["prepend"].get<std::string>(), ""});
      } else if (type == "Replace" && s.contains("pattern") && s["pattern"].is_object() && s["pattern"].contains("String") &&
                 s["pattern"]["String"].is_string() && s.contains("content") && s["content"].is_string()) {
        normalizers_.push_back({Normalizer::replace, s["pattern"]["String"].get<std::string>(), s["content"].get<std::string>()});
      } else {
        fail("normalizer", "'" + (type.empty() ? std::string("?") : type) +
                               "' is not supported (NFC, NFKC, Prepend, Replace of a string, a Sequence of them)");
      }
    }
  }

  template <typename Fail>
  void read_pre_tokenizer(const nlohmann::json& p, Fail fail) {
    // The splits, as tokenizer.json spells them.
    static const std::map<std::string, SplitPattern> kPatterns = {
        {kLlama3Split, SplitPattern::llama3}, {kQwen2Split, SplitPattern::qwen2}, {kGpt2Split, SplitPattern::gpt2}};
    if (p.is_null()) return;  // SentencePiece-style: the normalizers did the work
    if (!p.is_object()) fail("pre_tokenizer", "not an object");
    for (const nlohmann::json& s : steps_of(p, "pretokenizers")) {
      const std::string type = step_type(s);
      if (type == "Digits") {
        if (!s.value("individual_digits", false)) fail("pre_tokenizer", "Digits without individual_digits is not supported");
        digits_ = true;
      } else if (type == "Split") {
        const std::string regex = s.contains("pattern") && s["pattern"].is_object() ? s["pattern"].value("Regex", "") : "";
        const auto known = kPatterns.find(regex);
        if (known == kPatterns.end())
          fail("pre_tokenizer", "the Split pattern '" + (regex.empty() ? s.value("pattern", nlohmann::json()).dump() : regex) +
                                    "' is not supported (GPT-2's, Llama 3's, Qwen2's)");
        if (s.value("behavior", "") != "Isolated" || s.value("invert", false))
          fail("pre_tokenizer", "a Split other than Isolated is not supported");
        if (pattern_ != SplitPattern::none) fail("pre_tokenizer", "two split patterns");
        pattern_ = known->second;
      } else if (type == "ByteLevel") {
        if (s.value("add_prefix_space", false)) fail("pre_tokenizer", "ByteLevel with add_prefix_space is not supported");
        if (s.value("use_regex", true)) {
          if (pattern_ != SplitPattern::none) fail("pre_tokenizer", "two split patterns");
          pattern_ = SplitPattern::gpt2;
        }
        byte_level_ = true;
      } else {
        fail("pre_tokenizer", "'" + type + "' is not supported (ByteLevel, Digits, Split)");
      }
    }
    if (!byte_level_) fail("pre_tokenizer", "no ByteLevel step: a split of characters is not supported");
  }

  template <typename Fail>
  void read_decoder(const nlohmann::json& d, Fail fail) {
    if (byte_level_) {
      if (!d.is_null() && step_type(d) != "ByteLevel")
        fail("decoder", "'" + (step_type(d).empty() ? std::string("?") : step_type(d)) +
                            "' is not supported after a ByteLevel pre-tokenizer (ByteLevel)");
      return;
    }
    bool fused = false;
    for (const nlohmann::json& s : steps_of(d, "decoders")) {
      const std::string type = step_type(s);
      if (type == "Replace" && s.contains("pattern") && s["pattern"].is_object() && s["pattern"].contains("String") &&
          s["pattern"]["String"].is_string() && s.contains("content") && s["content"].is_string() && !decode_byte_fallback_)
        decode_replacements_.push_back({s["pattern"]["String"].get<std::string>(), s["content"].get<std::string>()});
      else if (type == "ByteFallback")
        decode_byte_fallback_ = true;
      else if (type == "Fuse")
        fused = true;
      else if (type == "Strip" && fused && s.value("stop", 0) == 0 && s.contains("content") && s["content"].is_string()) {
        strip_content_ = s["content"].get<std::string>();
        strip_start_ = s.value("start", 0u);
      } else
        fail("decoder", "'" + type + "' is not supported here (Replace of a string, ByteFallback, Fuse, then Strip of the start)");
    }
  }

  std::string normalized(std::string_view text) const {
    std::string out(text);
    for (const Normalizer& n : normalizers_) {
      switch (n.kind) {
        case Normalizer::nfc:
        case Normalizer::nfkc:
          out = normalize_unicode(out, n.kind == Normalizer::nfkc);
          break;
        case Normalizer::prepend:
          if (!out.empty()) out = n.a + out;
          break;
        case Normalizer::replace:
          replace_all(out, n.a, n.b);
          break;
      }
    }
    return out;
  }

  // Normalized text without added tokens: the digit split, the pattern's pieces, BPE on each.
  void encode_plain(std::string_view text, std::vector<int32_t>& ids) const {
    if (text.empty()) return;
    if (!byte_level_) return bpe_characters(text, ids);
    const CodePoints cps = code_points(text);
    std::vector<std::pair<size_t, size_t>> spans;  // code point ranges
    size_t begin = 0;
    for (size_t k = 0; k <= cps.cp.size(); ++k)
      if (k == cps.cp.size() || (digits_ && is_number(cps.cp[k]))) {
        if (k > begin) spans.push_back({begin, k});
        if (k < cps.cp.size()) spans.push_back({k, k + 1});
        begin = k + 1;
      }
    for (auto [first, last] : spans) {
      const std::vector<uint32_t> piece_cp(cps.cp.begin() + long(first), cps.cp.begin() + long(last));
      for (size_t i = 0; i < piece_cp.size();) {
        const size_t end = pattern_ == SplitPattern::none ? piece_cp.size() : next_split(piece_cp, i, pattern_);
        bpe_bytes(text.substr(cps.start[first + i], cps.start[first + end] - cps.start[first + i]), ids);
        i = end;
      }
    }
  }

  // Hugging Face's BPE: the pair of lowest merge rank first.
  std::vector<std::string> merge_by_rank(std::vector<std::string> parts) const {
    return merge_pairs(std::move(parts), [&](const std::string& a, const std::string& b) -> std::optional<std::pair<double, std::string>> {
      const auto it = merge_rank_.find(a + " " + b);
      if (it == merge_rank_.end()) return std::nullopt;
      return std::pair{-double(it->second), a + b};
    });
  }

  // Byte-level BPE of one piece: each byte as its code point, then the merges.
  void bpe_bytes(std::string_view piece, std::vector<int32_t>& ids) const {
    std::vector<std::string> parts;
    std::string whole;
    for (char ch : piece) {
      std::string s;
      append_utf8(s, byte_cp_[uint8_t(ch)]);
      whole += s;
      parts.push_back(std::move(s));
    }
    if (ignore_merges_)
      if (const auto it = vocab_.find(whole); it != vocab_.end()) return ids.push_back(it->second);
    for (const std::string& part : merge_by_rank(std::move(parts))) {
      const auto it = vocab_.find(part);
      if (it == vocab_.end()) throw InputError(source_ + ": the piece '" + part + "' has no token");
      ids.push_back(it->second);
    }
  }

  // SentencePiece-style BPE of a word: its characters, the merges, then a
  // piece the vocabulary lacks as its bytes' "<0xNN>" pieces (byte_fallback)
  // or the unknown token (consecutive ones fused with fuse_unk).
  void bpe_characters(std::string_view word, std::vector<int32_t>& ids) const {
    const CodePoints cps = code_points(word);
    std::vector<std::string> parts;
    for (size_t k = 0; k < cps.cp.size(); ++k) parts.emplace_back(word.substr(cps.start[k], cps.start[k + 1] - cps.start[k]));
    bool last_unknown = false;
    for (const std::string& part : merge_by_rank(std::move(parts))) {
      if (const auto it = vocab_.find(part); it != vocab_.end()) {
        ids.push_back(it->second);
        last_unknown = false;
        continue;
      }
      const bool bytes_known = byte_fallback_ && std::all_of(part.begin(), part.end(), [&](char c) { return byte_piece_[uint8_t(c)] >= 0; });
      if (bytes_known) {
        for (char c : part) ids.push_back(byte_piece_[uint8_t(c)]);
        last_unknown = false;
        continue;
      }
      if (unk_id_ < 0) throw InputError(source_ + ": the piece '" + part + "' has no token and the model no unknown token");
      if (!(fuse_unk_ && last_unknown)) ids.push_back(unk_id_);
      last_unknown = true;
    }
  }

  std::string source_;
  std::unordered_map<std::string, int32_t> vocab_;
  std::unordered_map<int32_t, std::string> text_of_;
  std::unordered_map<std::string, int32_t> merge_rank_;
  std::vector<Added> added_;
  std::unordered_map<int32_t, std::string> added_text_;
  std::vector<Normalizer> normalizers_;
  bool ignore_merges_ = false, digits_ = false, byte_level_ = false, byte_fallback_ = false, fuse_unk_ = false;
  int32_t unk_id_ = -1;
  std::array<int32_t, 256> byte_piece_{};  // byte_fallback: the "<0xNN>" piece of each byte, or -1
  SplitPattern pattern_ = SplitPattern::none;
  uint32_t vocab_size_ = 0;
  std::array<uint32_t, 256> byte_cp_{};
  std::unordered_map<uint32_t, uint8_t> cp_byte_;
  // SentencePiece-style decoding
  std::vector<std::pair<std::string, std::string>> decode_replacements_;
  bool decode_byte_fallback_ = false;
  std::string strip_content_;
  uint32_t strip_start_ = 0;
};

// ---------------------------------------------------------------- llama2.c

// llama2.c's tokenizer (run.c's build_tokenizer, encode and decode): pieces
// with merge scores; text becomes its UTF-8 characters (bytes + 3 where a
// character has no piece), then the best-scoring merge of neighbours, again
// and again. Decoding drops the space after BOS and prints byte pieces
// <0xXX> as their byte, skipping bytes that are neither printable nor space.
class Llama2cTokenizer final : public Tokenizer {
 public:
  Llama2cTokenizer(const std::string& bytes, uint32_t vocab_size, const std::string& source) {
    size_t at = 0;
    auto read = [&](void* out, size_t n, const std::string& what) {
      if (bytes.size() - at < n) throw InputError(source + ": ends inside " + what);
      std::memcpy(out, bytes.data() + at, n);
      at += n;
    };
    int32_t longest = 0;
    read(&longest, 4, "its header");
    if (longest < 1 || longest > 1024) throw InputError(source + ": max_token_length " + std::to_string(longest) + " is outside [1, 1024]");
    for (uint32_t id = 0; id < vocab_size; ++id) {
      float score;
      int32_t length;
      read(&score, 4, "token " + std::to_string(id));
      read(&length, 4, "token " + std::to_string(id));
      if (length < 0 || length > longest)
        throw InputError(source + ": token " + std::to_string(id) + " has length " + std::to_string(length) +
                         " (max_token_length " + std::to_string(longest) + ")");
      std::string piece(size_t(length), '\0');
      read(piece.data(), size_t(length), "token " + std::to_string(id));
      id_of_.emplace(piece, int32_t(id));  // the first of equal pieces wins
      pieces_.push_back(std::move(piece));
      scores_.push_back(score);
    }
    if (at != bytes.size())
      throw InputError(source + ": " + std::to_string(bytes.size() - at) + " bytes after the " +
                       std::to_string(vocab_size) + " tokens the model's vocabulary has");
  }

  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> ids;
    if (text.empty()) return ids;
    if (const int32_t space = lookup(" "); space >= 0) ids.push_back(space);  // the dummy prefix
    for (size_t i = 0; i < text.size();) {
      size_t length = 1;  // a UTF-8 character: its first byte and up to 3 continuation bytes
      while (i + length < text.size() && length < 4 && (uint8_t(text[i + length]) & 0xC0) == 0x80) ++length;
      if (const int32_t id = lookup(text.substr(i, length)); id >= 0) {
        ids.push_back(id);
      } else {
        for (size_t k = 0; k < length; ++k) ids.push_back(int32_t(uint8_t(text[i + k])) + 3);
      }
      i += length;
    }
    return merge(std::move(ids));
  }

  // run.c's loop, merging the best-scoring pair of neighbours (the leftmost
  // of equal scores) until none merges.
  std::vector<int32_t> merge(std::vector<int32_t> ids) const {
    return merge_pairs(std::move(ids), [&](int32_t a, int32_t b) -> std::optional<std::pair<double, int32_t>> {
      const int32_t id = lookup(piece(a) + piece(b));
      if (id < 0) return std::nullopt;
      return std::pair{double(scores_[size_t(id)]), id};
    });
  }

  std::string decode(int32_t previous, int32_t token) const override {
    std::string text = piece(token);
    if (previous == 1 && !text.empty() && text[0] == ' ') text.erase(0, 1);
    if (const int byte = fallback_byte(text); byte >= 0) text = std::string(1, char(byte));
    if (text.size() == 1 && !std::isprint(uint8_t(text[0])) && !std::isspace(uint8_t(text[0]))) return "";
    return text;
  }

  uint32_t vocab_size() const override { return uint32_t(pieces_.size()); }

 private:
  int32_t lookup(std::string_view piece) const {
    const auto it = id_of_.find(std::string(piece));
    return it == id_of_.end() ? -1 : it->second;
  }
  const std::string& piece(int32_t id) const {
    if (id < 0 || size_t(id) >= pieces_.size()) throw InputError("llama2.c tokenizer: no token " + std::to_string(id));
    return pieces_[size_t(id)];
  }

  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  std::unordered_map<std::string, int32_t> id_of_;
};

}  // namespace

std::unique_ptr<Tokenizer> parse_hf_tokenizer(const std::string& json_text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(source + ": not JSON (" + std::string(e.what()) + ")");
  }
  return std::make_unique<HfTokenizer>(j, source);
}

std::unique_ptr<Tokenizer> parse_llama2c_tokenizer(const std::string& bytes, uint32_t vocab_size, const std::string& source) {
  return std::make_unique<Llama2cTokenizer>(bytes, vocab_size, source);
}

std::unique_ptr<Tokenizer> open_tokenizer(const std::filesystem::path& path, uint32_t vocab_size) {
  const std::filesystem::path file = std::filesystem::is_directory(path) ? path / "tokenizer.json" : path;
  if (file.extension() == ".json") return parse_hf_tokenizer(read_text_file(file), file.string());
  return parse_llama2c_tokenizer(read_text_file(file), vocab_size, file.string());
}

namespace {

// Appends `bytes` to `out` as valid_utf8 makes them; with `hold`, the first
// bytes of a character that the end cuts short are left out, and their count
// returned (0 otherwise).
size_t append_valid_utf8(std::string& out, std::string_view bytes, bool hold) {
  const int64_t end = int64_t(bytes.size());
  for (int64_t i = 0; i < end;) {
    const int64_t start = i;
    UChar32 c;
    U8_NEXT(bytes.data(), i, end, c);  // a bad sequence: c < 0, i past its maximal subpart
    if (c >= 0) {
      out.append(bytes.substr(size_t(start), size_t(i - start)));
      continue;
    }
    // A subpart that reaches the end is a character's first bytes where it
    // has more than one, or one byte that leads a sequence (C2-F4).
    const auto lead = uint8_t(bytes[size_t(start)]);
    if (hold && i == end && (i - start > 1 || (lead >= 0xC2 && lead <= 0xF4))) return size_t(end - start);
    out += "\xEF\xBF\xBD";
  }
  return 0;
}

}  // namespace

std::string valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  append_valid_utf8(out, bytes, false);
  return out;
}

std::string Utf8Stream::push(std::string_view piece) {
  held_.append(piece);
  std::string out;
  const size_t held = append_valid_utf8(out, held_, true);
  held_.erase(0, held_.size() - held);
  return out;
}

std::string Utf8Stream::finish() {
  std::string out;
  append_valid_utf8(out, held_, false);
  held_.clear();
  return out;
}

namespace {

class TokenIds : public Tokenizer {
 public:
  explicit TokenIds(uint32_t vocab) : vocab_(vocab) {}
  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> ids;
    size_t i = 0;
    while (i < text.size()) {
      if (std::isspace(static_cast<unsigned char>(text[i]))) {
        ++i;
        continue;
      }
      size_t end = i;
      uint64_t id = 0;
      while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])) && id < vocab_) id = id * 10 + uint64_t(text[end++] - '0');
      if (end == i || id >= vocab_ || (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end]))))
        throw InputError("without a tokenizer a prompt is token ids below " + std::to_string(vocab_) + " (\"17 4 2031\"), not '" +
                             std::string(text.substr(i, std::min<size_t>(16, text.size() - i))) + "'",
                         "tokenizer");
      ids.push_back(int32_t(id));
      i = end;
    }
    return ids;
  }
  std::string decode(int32_t, int32_t token) const override { return " " + std::to_string(token); }
  uint32_t vocab_size() const override { return vocab_; }

 private:
  uint32_t vocab_;
};

}  // namespace

std::unique_ptr<Tokenizer> token_id_tokenizer(uint32_t vocab_size) { return std::make_unique<TokenIds>(vocab_size); }

bool is_token_ids(const Tokenizer& tokenizer) { return dynamic_cast<const TokenIds*>(&tokenizer) != nullptr; }

void require_text_tokenizer(const Tokenizer& tokenizer, const std::string& what) {
  if (is_token_ids(tokenizer))
    throw InputError(what + "'s prompts are text, and random weights without a tokenizer take token ids: give one",
                     "tokenizer");
}

}  // namespace kv::model
