#pragma once
// A GGUF file's header, metadata and tensor table (llama.cpp's format,
// versions 2 and 3, little-endian), read from its bytes with every count,
// length and offset checked against the bytes there are before anything is
// allocated: a bad file gets one line (InputError), never a crash or an
// allocation of what it merely claims. What the tensors mean (a model) is
// for the checkpoint reader; this is the container.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/ggml_blocks.h"

namespace kv::model {

// A tensor's type: any of formats::GgmlType (ggml's numbering); a row is whole blocks.
using GgufType = formats::GgmlType;

struct GgufTensor {
  std::string name;
  std::vector<uint64_t> dims;  // GGUF's order: dims[0] varies fastest (a row's length)
  GgufType type;
  std::span<const std::byte> data;  // within the file's bytes
};

struct GgufFile {
  uint32_t version = 0;
  nlohmann::json metadata;  // key -> value (integers, floats, bools, strings, arrays of them)
  std::vector<GgufTensor> tensors;
  uint32_t alignment = 32;
};

// The bytes stay the caller's: the tensors point into them.
GgufFile parse_gguf(std::span<const std::byte> bytes, const std::string& source);

// The model a llama-architecture GGUF file describes, as its config.json
// would (parse_hf_config checks it the same way): the `llama.*` keys, the
// vocabulary from `tokenizer.ggml.tokens`, the LM head tied where the file has
// no `output.weight`, RoPE on neighbouring channels (llama.cpp's converter
// permutes q's and k's rows so), linear and YaRN scaling. Anything else is
// refused naming the key.
struct ModelConfig;
ModelConfig gguf_model_config(const GgufFile& file, const std::string& source);

// The file's own tokenizer (`tokenizer.ggml.*`) as the tokenizer.json it
// stands for, for parse_hf_tokenizer: byte-level BPE (`tokenizer.ggml.model`
// gpt2) with GPT-2's (`pre` gpt-2) or Llama 3's (`pre` llama-bpe) split, its
// control and user-defined tokens as added tokens. Empty where the file has no
// tokenizer; anything else refused naming the key.
std::string gguf_tokenizer_json(const GgufFile& file, const std::string& source);

}  // namespace kv::model
