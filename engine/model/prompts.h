#pragma once
// The retrieval prompts the seed papers test with, in the same text as
// tools/export/capture_qkv.py writes them, so that a capture, a needle test and a
// generation see the same words.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/config.h"
#include "model/tokenizer.h"

namespace kv::model {

struct RetrievalPrompt {
  std::string text;
  std::string answer;              // what a model that found the needle says next
  size_t needle_first = 0, needle_end = 0;  // the needle's characters in text
};

// What the model reads for `text`: its BOS where it has one, then the text's tokens.
std::vector<int32_t> prompt_tokens(const Tokenizer& tokenizer, const ModelConfig& model, std::string_view text);
// The text of `ids`, each token decoded after the one before it (the first
// after `previous`; -1: at the start of a text), made valid_utf8 as a whole:
// kvscope.Model.detokenize, and generate's text after the prompt's last
// token. InputError for an id outside the model's vocabulary.
std::string ids_text(const Tokenizer& tokenizer, const ModelConfig& model, std::span<const int32_t> ids, int32_t previous = -1);

// Quest's and Fier's passkey prompt: an introduction, filler sentences with the
// passkey sentence at `depth` (0..1) of them, and the question; as many fillers
// as keep the prompt (with a BOS) within `tokens` tokens.
RetrievalPrompt passkey_prompt(const Tokenizer& tokenizer, uint32_t tokens, double depth, uint32_t passkey);

// A needle sentence in a haystack: the haystack cut so that with the needle and
// the question the prompt (with a BOS) holds at most `tokens` tokens, the needle
// at `depth` of it, after the last ". " before that point where there is one.
RetrievalPrompt needle_prompt(const Tokenizer& tokenizer, const std::string& haystack, const std::string& needle,
                              const std::string& question, uint32_t tokens, double depth);

// The text each token adds after the one before it (the first after `previous`).
std::vector<std::string> token_pieces(const Tokenizer& tokenizer, const std::vector<int32_t>& ids, int32_t previous);
// The tokens [first, end) of `ids` whose text overlaps bytes [from, to) of the text they decode to.
std::pair<uint32_t, uint32_t> token_span(const std::vector<std::string>& pieces, size_t from, size_t to);

}  // namespace kv::model
