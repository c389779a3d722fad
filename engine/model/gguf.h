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

namespace kv::model {

// The tensor types read: ggml's numbering.
enum class GgufType : uint32_t { f32 = 0, f16 = 1, q8_0 = 8, bf16 = 30 };

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

}  // namespace kv::model
