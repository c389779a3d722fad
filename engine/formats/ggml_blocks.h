#pragma once
// ggml's tensor types as GGUF files store them (llama.cpp's ggml-common.h
// and ggml-quants.c are the facts): each type's block of elements and its
// bytes, and a row's values on the CPU, computed in the order ggml computes
// them, so that a row here equals ggml's own dequantization bit for bit
// (tests/test_ggml_blocks.cpp; tests/ggml_blocks_oracle_test.sh against
// ggml's library itself where the llama.cpp peer's cache is there). The
// reference the quantized GPU kernels are checked against, and what a reader
// that widens such a file to 16 bits uses.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace kv::formats {

// ggml's numbering (enum ggml_type), for the types a GGUF model file of
// llama.cpp's usual kinds (F16, BF16, Q8_0, Q4_K_M, Q5_K_M, Q6_K, Q3_K_M and
// the older Q4_0 / Q4_1 / Q5_0 / Q5_1) holds.
enum class GgmlType : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  bf16 = 30,
};

struct BlockLayout {
  GgmlType type;
  const char* name;   // as llama.cpp names it: "Q4_K", "F16"
  uint32_t elements;  // a block's values (1 for the plain types)
  uint32_t bytes;     // a block's bytes
};

// The layout of ggml type number `type`, or none where it is not one of the above.
std::optional<BlockLayout> block_layout(uint32_t type);
// llama.cpp's name of any ggml type number ("IQ4_XS", "type 99" where unknown), for errors.
std::string ggml_type_name(uint32_t type);

// The values of `out.size()` elements (whole blocks) stored as `type` in
// `bytes` (exactly their blocks' bytes). Throws std::invalid_argument otherwise.
void dequantize(GgmlType type, std::span<const std::byte> bytes, std::span<float> out);

}  // namespace kv::formats
