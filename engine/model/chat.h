#pragma once
// A user's prompt as an instruct model's chat template wraps one user turn,
// ready for the assistant's answer (transformers' apply_chat_template with
// add_generation_prompt): the formats the seed papers' families use, told
// apart by the template's own markers.
#include <memory>
#include <string>
#include <string_view>

#include "model/tokenizer.h"

namespace kv::model {

enum class ChatFormat {
  none,
  llama3,  // <|start_header_id|>user<|end_header_id|> ... <|eot_id|>: Llama 3 and 3.1
  chatml,  // <|im_start|>user ... <|im_end|>: Qwen2, Qwen2.5, Qwen3
  inst,    // [INST] ... [/INST]: Llama 2 chat, Mistral instruct
  vicuna,  // "... USER: ... ASSISTANT:": Vicuna and LongChat
};

// The format whose markers a chat template (tokenizer_config.json's
// chat_template, GGUF's tokenizer.chat_template) holds; InputError (setting
// "chat") when it holds none of them.
ChatFormat chat_format_of_template(std::string_view chat_template);
// A format by its name (llama3, chatml, inst, vicuna); InputError naming them otherwise.
ChatFormat chat_format_named(const std::string& name);
const char* chat_format_name(ChatFormat format);

// `text` as the format's one user turn and the assistant's header after it,
// without the BOS the runner adds itself (the templates' bos_token).
std::string wrap_chat(ChatFormat format, std::string_view text);

// A tokenizer that wraps every text it encodes as `format`'s one user turn
// (wrap_chat) before `inner` encodes it: prompts built to a length in tokens
// (needle's, perplexity's documents) then count the wrapping too. Decoding is
// inner's.
std::unique_ptr<Tokenizer> chat_tokenizer(std::unique_ptr<Tokenizer> inner, ChatFormat format);
// The tokenizer under a chat tokenizer's wrapping, or `tokenizer` itself: for
// text that is not a prompt (the needle's expected answer).
const Tokenizer& unwrapped_tokenizer(const Tokenizer& tokenizer);

}  // namespace kv::model
