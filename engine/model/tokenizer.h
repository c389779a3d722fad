#pragma once
// Text to token ids and back, in C++: Hugging Face tokenizer.json files of
// byte-level BPE (GPT-2's and Llama 3's pre-tokenizer patterns, and the
// Digits(individual_digits) split before GPT-2's), and llama2.c's tokenizer
// (BPE by merge scores). Anything else is refused with the reason.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kv::model {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // The ids of `text`, without any BOS (the runner adds the model's).
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // The bytes `token` adds to the text after `previous` (-1 at the start), as
  // the model's own decoder prints them; streamed, a character may arrive in
  // pieces.
  virtual std::string decode(int32_t previous, int32_t token) const = 0;
  virtual uint32_t vocab_size() const = 0;
};

// A model without a tokenizer (random weights from a bare config.json): text
// is token ids written as decimal numbers ("17 4 2031"), and a token decodes
// as " <id>". is_token_ids tells it apart.
std::unique_ptr<Tokenizer> token_id_tokenizer(uint32_t vocab_size);
bool is_token_ids(const Tokenizer& tokenizer);
// InputError (setting "tokenizer") where `tokenizer` takes token ids and
// `what` (needle, perplexity, capture) builds its prompts from text.
void require_text_tokenizer(const Tokenizer& tokenizer, const std::string& what);

// A Hugging Face tokenizer.json, from its text; `source` names it in errors.
std::unique_ptr<Tokenizer> parse_hf_tokenizer(const std::string& json_text, const std::string& source);
// A llama2.c tokenizer (tok*.bin) for a model of `vocab_size` tokens, from its bytes.
std::unique_ptr<Tokenizer> parse_llama2c_tokenizer(const std::string& bytes, uint32_t vocab_size, const std::string& source);
// tokenizer.json (a file, or in a model directory) or a llama2.c tok*.bin.
std::unique_ptr<Tokenizer> open_tokenizer(const std::filesystem::path& path, uint32_t vocab_size);

// `bytes` as UTF-8 text: each maximal ill-formed subpart (a sequence cut
// short, a stray continuation byte, an overlong form, an encoded surrogate,
// a byte C0, C1 or F5-FF) becomes one U+FFFD, Unicode's practice for U+FFFD
// substitution and Python's bytes.decode("utf-8", errors="replace"). A
// model's tokens can stop, or be drawn, inside a character; what the front
// ends show (stdout, JSON, a Python str) is text.
std::string valid_utf8(std::string_view bytes);

// valid_utf8 of bytes that come in pieces (a generated token's at a time):
// push returns the text that is final so far, holding back the first bytes
// of a character that may yet complete; finish returns the rest. The texts
// returned add up to valid_utf8 of all the bytes pushed.
class Utf8Stream {
 public:
  std::string push(std::string_view piece);
  std::string finish();

 private:
  std::string held_;
};

}  // namespace kv::model
