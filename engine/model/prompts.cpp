#include "model/prompts.h"

#include <cmath>

#include "error.h"

namespace kv::model {
namespace {

const char* const kPasskeyIntro =
    "There is an important info hidden inside a lot of irrelevant text. Find it and memorize it. "
    "I will quiz you about the important information there.\n";
const char* const kPasskeyFiller = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. ";
const char* const kPasskeyQuestion = "\nWhat is the pass key? The pass key is";

RetrievalPrompt build_passkey(uint32_t fillers, double depth, uint32_t passkey) {
  const std::string key = std::to_string(passkey);
  const std::string needle = "The pass key is " + key + ". Remember it. " + key + " is the pass key. ";
  const auto before = uint32_t(std::lround(fillers * depth));
  RetrievalPrompt p;
  p.text = kPasskeyIntro;
  for (uint32_t i = 0; i < before; ++i) p.text += kPasskeyFiller;
  p.needle_first = p.text.size();
  p.text += needle;
  p.needle_end = p.text.size();
  for (uint32_t i = before; i < fillers; ++i) p.text += kPasskeyFiller;
  p.text += kPasskeyQuestion;
  p.answer = " " + key;
  return p;
}

}  // namespace

RetrievalPrompt passkey_prompt(const Tokenizer& tokenizer, uint32_t tokens, double depth, uint32_t passkey) {
  if (!(depth >= 0 && depth <= 1)) throw InputError("the depth must be in [0, 1]");
  auto length = [&](uint32_t fillers) { return tokenizer.encode(build_passkey(fillers, depth, passkey).text).size() + 1; };
  if (length(0) > tokens) throw InputError("a passkey prompt needs more than " + std::to_string(tokens) + " tokens");
  uint32_t low = 0, high = 1;  // the most fillers that fit, by doubling then bisection
  while (length(high) <= tokens && high < (1u << 22)) low = high, high *= 2;
  while (high - low > 1) {
    const uint32_t middle = low + (high - low) / 2;
    (length(middle) <= tokens ? low : high) = middle;
  }
  return build_passkey(low, depth, passkey);
}

}  // namespace kv::model
