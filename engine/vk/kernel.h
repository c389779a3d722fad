#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "vk/device.h"
#include "vk/handle.h"

namespace kv::vk {

// Layout of one compute kernel: `bindings` storage buffers (binding 0..n-1,
// bound by push descriptors) and a push-constant block of `push_bytes`.
struct KernelLayout {
  uint32_t bindings = 0;
  uint32_t push_bytes = 0;
};

// What the driver builds for a kernel; kernels of one kind share it
// (Device::compiled_kernel).
struct CompiledKernel {
  UniqueDescriptorSetLayout set_layout;
  UniquePipelineLayout pipeline_layout;
  UniquePipeline pipeline;
};

// A compute pipeline from embedded SPIR-V. `specialization[i]` is the value of
// the 32-bit specialization constant with constant_id i.
class Kernel {
 public:
  Kernel(const Device& device, std::string name, std::span<const uint32_t> spirv,
         KernelLayout layout, std::span<const uint32_t> specialization);

  const std::string& name() const { return name_; }
  const KernelLayout& layout() const { return layout_; }
  VkPipeline pipeline() const { return compiled_->pipeline.get(); }
  VkPipelineLayout pipeline_layout() const { return compiled_->pipeline_layout.get(); }

 private:
  std::string name_;
  KernelLayout layout_;
  std::shared_ptr<const CompiledKernel> compiled_;
};

// A tensor-core kernel's SPIR-V for this device: its VK_KHR_cooperative_matrix
// version (NAME_khr_spirv, shaders/CMakeLists.txt) where the device takes
// those (Device::khr_cooperative_matrix), else glslang's NV one.
inline std::span<const uint32_t> cooperative_matrix_spirv(const Device& device, std::span<const uint32_t> nv,
                                                          std::span<const uint32_t> khr) {
  return device.khr_cooperative_matrix() ? khr : nv;
}

}  // namespace kv::vk
