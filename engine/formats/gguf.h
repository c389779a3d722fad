#pragma once
// Room formats/: the model files' containers and ggml's block types, bytes to
// tensors (gguf.h, ggml_blocks.h, ggml_quantize.h); what the tensors mean as
// a model is model/'s (checkpoint.h, gguf_model.h). It includes base/ alone.
// A GGUF file's header, metadata and tensor table (llama.cpp's format,
// versions 2 and 3, little-endian), read from its bytes with every count,
// length and offset checked against the bytes there are before anything is
// allocated: a bad file gets one line (InputError), never a crash or an
// allocation of what it merely claims. What the tensors mean (a model) is
// for model/gguf_model.h and the checkpoint reader; this is the container.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/ggml_blocks.h"

namespace kv::formats {

struct GgufTensor {
  std::string name;
  std::vector<uint64_t> dims;  // GGUF's order: dims[0] varies fastest (a row's length)
  GgmlType type;  // any of ggml_blocks.h's; a row is whole blocks
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

}  // namespace kv::formats
