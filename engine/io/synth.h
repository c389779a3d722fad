#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

#include "io/capture.h"

namespace kv {

struct SynthOptions {
  uint32_t heads = 32;
  uint32_t kv_heads = 8;
  uint32_t dim = 128;
  uint32_t tokens = 4096;
  uint32_t layers = 1;
  uint64_t seed = 0;
  DType dtype = DType::f16;
};

// Writes a deterministic synthetic capture whose attention has the structure
// real models show: sinks at the first tokens, recency through RoPE's decay,
// a few needle keys that late queries match, outlier key channels. For tests
// and benchmarks only; it says nothing about real models.
void write_synthetic_capture(const std::filesystem::path& path, const SynthOptions& options);

// Needle positions used for layer `layer`, KV head `kv_head` (for tests and docs).
std::vector<uint32_t> synthetic_needles(const SynthOptions& options, uint32_t layer, uint32_t kv_head);

}  // namespace kv
