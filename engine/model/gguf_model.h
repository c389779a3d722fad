#pragma once
// What a GGUF file's metadata says of its model (formats/gguf.h reads the
// container): the config a config.json would give, and its own tokenizer.
#include <string>

#include "formats/gguf.h"

namespace kv::model {

// The model a llama-architecture GGUF file describes, as its config.json
// would (parse_hf_config checks it the same way): the `llama.*` keys, the
// vocabulary from `tokenizer.ggml.tokens`, the LM head tied where the file has
// no `output.weight`, RoPE on neighbouring channels (llama.cpp's converter
// permutes q's and k's rows so), linear and YaRN scaling. Anything else is
// refused naming the key.
struct ModelConfig;
ModelConfig gguf_model_config(const formats::GgufFile& file, const std::string& source);

// The file's own tokenizer (`tokenizer.ggml.*`) as the tokenizer.json it
// stands for, for parse_hf_tokenizer: byte-level BPE (`tokenizer.ggml.model`
// gpt2) with GPT-2's (`pre` gpt-2) or Llama 3's (`pre` llama-bpe) split, its
// control and user-defined tokens as added tokens. Empty where the file has no
// tokenizer; anything else refused naming the key.
std::string gguf_tokenizer_json(const formats::GgufFile& file, const std::string& source);

}  // namespace kv::model
