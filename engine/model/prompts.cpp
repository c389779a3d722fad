#include "model/prompts.h"

#include <cmath>
#include <utility>

#include "base/error.h"

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

std::vector<int32_t> prompt_tokens(const Tokenizer& tokenizer, const ModelConfig& model, std::string_view text) {
  std::vector<int32_t> tokens;
  if (model.bos_token >= 0) tokens.push_back(model.bos_token);
  const std::vector<int32_t> text_tokens = tokenizer.encode(text);
  tokens.insert(tokens.end(), text_tokens.begin(), text_tokens.end());
  return tokens;
}

std::string ids_text(const Tokenizer& tokenizer, const ModelConfig& model, std::span<const int32_t> ids, int32_t previous) {
  std::string bytes;
  for (int32_t id : ids) {
    if (id < 0 || uint32_t(id) >= model.vocab)
      throw InputError("token id " + std::to_string(id) + " is outside the model's vocabulary (0 to " +
                           std::to_string(model.vocab - 1) + ")",
                       "ids");
    bytes += tokenizer.decode(std::exchange(previous, id), id);
  }
  return valid_utf8(bytes);
}

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

RetrievalPrompt needle_prompt(const Tokenizer& tokenizer, const std::string& haystack, const std::string& needle,
                              const std::string& question, uint32_t tokens, double depth) {
  if (!(depth >= 0 && depth <= 1)) throw InputError("the depth must be in [0, 1]");
  const std::string sentence = needle + (needle.empty() || needle.back() == ' ' ? "" : " ");
  auto build = [&](size_t chars) {
    const std::string cut = haystack.substr(0, chars);
    const size_t target = size_t(double(cut.size()) * depth);
    // The last ". " that ends by the target, as tools/export/capture_qkv.py places it.
    const size_t stop = depth > 0 && target >= 2 ? cut.rfind(". ", target - 2) : std::string::npos;
    const size_t at = stop != std::string::npos ? stop + 2 : target;
    RetrievalPrompt p;
    p.text = cut.substr(0, at) + sentence + cut.substr(at) + question;
    p.needle_first = at;
    p.needle_end = at + sentence.size();
    return p;
  };
  auto fits = [&](size_t chars) { return tokenizer.encode(build(chars).text).size() + 1 <= tokens; };
  if (!fits(0)) throw InputError("the needle and the question alone take more than " + std::to_string(tokens) + " tokens");
  size_t low = 0, high = haystack.size() + 1;  // the most haystack characters that fit
  while (high - low > 1) {
    const size_t middle = low + (high - low) / 2;
    (fits(middle) ? low : high) = middle;
  }
  return build(low);
}

std::vector<std::string> token_pieces(const Tokenizer& tokenizer, const std::vector<int32_t>& ids, int32_t previous) {
  std::vector<std::string> pieces;
  for (int32_t id : ids) pieces.push_back(tokenizer.decode(std::exchange(previous, id), id));
  return pieces;
}

std::pair<uint32_t, uint32_t> token_span(const std::vector<std::string>& pieces, size_t from, size_t to) {
  uint32_t first = uint32_t(pieces.size()), end = 0;
  size_t at = 0;
  for (uint32_t i = 0; i < pieces.size(); ++i) {
    const size_t next = at + pieces[i].size();
    if (next > from && at < to && next > at) {
      first = std::min(first, i);
      end = i + 1;
    }
    at = next;
  }
  if (first >= end) throw InputError("the needle is not among the prompt's tokens");
  return {first, end};
}

}  // namespace kv::model
