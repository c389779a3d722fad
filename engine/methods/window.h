#pragma once
// Which queries SnapKV, H2O and SampleAttention look at for a block, shared by
// their GPU pipeline and their float64 reference (docs/methods.md).
#include <cstdint>

#include "methods/method.h"

namespace kv {

enum class WindowKind { snapkv, h2o, sample_attention };

// Queries first + i * stride for i < count; the last `recent` candidates are
// kept outright and the rest ranked.
struct Window {
  uint32_t first = 0, count = 0, stride = 1, recent = 0;
};

Window window(WindowKind kind, const MethodOptions& options, const Block& block, uint32_t budget);

}  // namespace kv
