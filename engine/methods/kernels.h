#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "capture.h"
#include "element_type.h"
#include "vk/kernel.h"

namespace kv {

// A method kernel specialised for the layer: constant 0 = head dimension,
// 1 = element type of the stored tensors, then `extra`.
template <typename Push>
vk::Kernel make_layer_kernel(const vk::Device& device, const char* name, std::span<const uint32_t> spirv,
                             uint32_t bindings, const AttentionShape& shape, DType dtype,
                             std::initializer_list<uint32_t> extra = {}) {
  std::vector<uint32_t> specialization{shape.dim, element_type(dtype)};
  specialization.insert(specialization.end(), extra);
  return vk::Kernel(device, name, spirv, {bindings, sizeof(Push)}, specialization);
}

inline uint32_t ceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

}  // namespace kv
