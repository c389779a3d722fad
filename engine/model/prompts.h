#pragma once
// The retrieval prompts the seed papers test with, in the same text as
// tools/capture_qkv.py writes them, so that a capture, a needle test and a
// generation see the same words.
#include <cstdint>
#include <string>

#include "model/tokenizer.h"

namespace kv::model {

struct RetrievalPrompt {
  std::string text;
  std::string answer;              // what a model that found the needle says next
  size_t needle_first = 0, needle_end = 0;  // the needle's characters in text
};

// Quest's and Fier's passkey prompt: an introduction, filler sentences with the
// passkey sentence at `depth` (0..1) of them, and the question; as many fillers
// as keep the prompt (with a BOS) within `tokens` tokens.
RetrievalPrompt passkey_prompt(const Tokenizer& tokenizer, uint32_t tokens, double depth, uint32_t passkey);

}  // namespace kv::model
