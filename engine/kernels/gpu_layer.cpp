#include "kernels/gpu_layer.h"

#include <cstring>

#include "base/error.h"

namespace kv {

GpuLayer::GpuLayer(const vk::Device& device, const AttentionShape& shape_, DType dtype_, double scale_,
                   std::span<const std::byte> key_bytes, std::span<const std::byte> value_bytes)
    : shape(shape_), dtype(dtype_), scale(scale_),
      keys(device, key_bytes.size()), values(device, value_bytes.size()) {
  const size_t expected = size_t(shape.kv_heads) * shape.tokens * shape.dim * dtype_size(dtype);
  if (key_bytes.size() != expected || value_bytes.size() != expected)
    throw InputError("GpuLayer: keys/values hold " + std::to_string(key_bytes.size()) + "/" +
                     std::to_string(value_bytes.size()) + " bytes, expected " + std::to_string(expected));
  keys.upload(key_bytes);
  values.upload(value_bytes);
  host_keys = key_bytes;
}

GpuLayer::GpuLayer(const vk::Device& device, const Capture& capture, const CaptureLayer& layer)
    : GpuLayer(device, layer.shape, layer.dtype, capture.scale(layer), layer.k->data, layer.v->data) {
  host_queries = layer.q->data;
}

GpuLayer::GpuLayer(const vk::Device& device, const AttentionShape& shape_, DType dtype_, double scale_)
    : shape(shape_), dtype(dtype_), scale(scale_),
      keys(device, size_t(shape_.kv_heads) * shape_.tokens * shape_.dim * dtype_size(dtype_)),
      values(device, size_t(shape_.kv_heads) * shape_.tokens * shape_.dim * dtype_size(dtype_)) {
  keys.fill(0);
  values.fill(0);
}

std::vector<std::byte> gather_queries(const AttentionShape& shape, DType dtype, std::span<const std::byte> q,
                                      std::span<const uint32_t> positions) {
  const size_t row_bytes = size_t(shape.dim) * dtype_size(dtype);
  std::vector<std::byte> gathered(size_t(shape.heads) * positions.size() * row_bytes);
  for (uint32_t h = 0; h < shape.heads; ++h)
    for (size_t i = 0; i < positions.size(); ++i) {
      if (positions[i] >= shape.tokens)
        throw InputError("query position " + std::to_string(positions[i]) + " is past T=" + std::to_string(shape.tokens));
      std::memcpy(gathered.data() + (h * positions.size() + i) * row_bytes,
                  q.data() + (size_t(h) * shape.tokens + positions[i]) * row_bytes, row_bytes);
    }
  return gathered;
}

}  // namespace kv
