#pragma once
#include <cstddef>
#include <span>
#include <vector>

#include "io/capture.h"
#include "vk/buffer.h"

namespace kv {

// Keys and values of one attention layer in device memory, in the capture's dtype.
struct GpuLayer {
  GpuLayer(const vk::Device& device, const AttentionShape& shape, DType dtype, double scale,
           std::span<const std::byte> keys, std::span<const std::byte> values);
  GpuLayer(const vk::Device& device, const Capture& capture, const CaptureLayer& layer);
  // An empty cache of shape.tokens positions (zeros), which a model run fills as it goes.
  GpuLayer(const vk::Device& device, const AttentionShape& shape, DType dtype, double scale);

  AttentionShape shape;
  DType dtype;
  double scale;
  vk::Buffer keys;    // [G, T, d]
  vk::Buffer values;  // [G, T, d]
  // Every query [H, T, d] in host memory (the capture's mapping), for methods
  // that read queries other than the block's (SnapKV's window, H2O's history);
  // they upload it once. Empty when the layer has none (bench: until asked).
  std::span<const std::byte> host_queries;
  // The keys as given, in host memory: Loki builds its basis from them.
  std::span<const std::byte> host_keys;
};

// Rows of Q [H, T, d] at `positions`, as [H, positions.size(), d] in the same dtype.
std::vector<std::byte> gather_queries(const AttentionShape& shape, DType dtype, std::span<const std::byte> q,
                                      std::span<const uint32_t> positions);

}  // namespace kv
