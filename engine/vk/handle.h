#pragma once
#include <vulkan/vulkan.h>

#include <utility>

namespace kv::vk {

// The one owner of a Vulkan object created from a VkDevice: destroys it with
// `Destroy` exactly once. Every vkDestroy*/vkFree* of device objects lives here.
template <typename Handle, void (*Destroy)(VkDevice, Handle, const VkAllocationCallbacks*)>
class DeviceHandle {
 public:
  DeviceHandle() = default;
  DeviceHandle(VkDevice device, Handle handle) : device_(device), handle_(handle) {}
  DeviceHandle(DeviceHandle&& other) noexcept
      : device_(other.device_), handle_(std::exchange(other.handle_, VK_NULL_HANDLE)) {}
  DeviceHandle& operator=(DeviceHandle&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = other.device_;
      handle_ = std::exchange(other.handle_, VK_NULL_HANDLE);
    }
    return *this;
  }
  DeviceHandle(const DeviceHandle&) = delete;
  DeviceHandle& operator=(const DeviceHandle&) = delete;
  ~DeviceHandle() { reset(); }

  void reset() {
    if (handle_ != VK_NULL_HANDLE) Destroy(device_, handle_, nullptr);
    handle_ = VK_NULL_HANDLE;
  }
  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != VK_NULL_HANDLE; }

 private:
  VkDevice device_ = VK_NULL_HANDLE;
  Handle handle_ = VK_NULL_HANDLE;
};

using UniqueBuffer = DeviceHandle<VkBuffer, vkDestroyBuffer>;
using UniqueMemory = DeviceHandle<VkDeviceMemory, vkFreeMemory>;
using UniqueShaderModule = DeviceHandle<VkShaderModule, vkDestroyShaderModule>;
using UniqueDescriptorSetLayout = DeviceHandle<VkDescriptorSetLayout, vkDestroyDescriptorSetLayout>;
using UniquePipelineLayout = DeviceHandle<VkPipelineLayout, vkDestroyPipelineLayout>;
using UniquePipeline = DeviceHandle<VkPipeline, vkDestroyPipeline>;
using UniqueCommandPool = DeviceHandle<VkCommandPool, vkDestroyCommandPool>;
using UniqueQueryPool = DeviceHandle<VkQueryPool, vkDestroyQueryPool>;
using UniqueFence = DeviceHandle<VkFence, vkDestroyFence>;

}  // namespace kv::vk

namespace kv::vk {

// Owner of one primary command buffer, freed back to its pool.
class UniqueCommandBuffer {
 public:
  UniqueCommandBuffer() = default;
  UniqueCommandBuffer(VkDevice device, VkCommandPool pool, VkCommandBuffer buffer)
      : device_(device), pool_(pool), buffer_(buffer) {}
  UniqueCommandBuffer(UniqueCommandBuffer&& other) noexcept
      : device_(other.device_), pool_(other.pool_),
        buffer_(std::exchange(other.buffer_, VK_NULL_HANDLE)) {}
  UniqueCommandBuffer& operator=(UniqueCommandBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = other.device_;
      pool_ = other.pool_;
      buffer_ = std::exchange(other.buffer_, VK_NULL_HANDLE);
    }
    return *this;
  }
  UniqueCommandBuffer(const UniqueCommandBuffer&) = delete;
  UniqueCommandBuffer& operator=(const UniqueCommandBuffer&) = delete;
  ~UniqueCommandBuffer() { reset(); }

  void reset() {
    if (buffer_ != VK_NULL_HANDLE) vkFreeCommandBuffers(device_, pool_, 1, &buffer_);
    buffer_ = VK_NULL_HANDLE;
  }
  VkCommandBuffer get() const { return buffer_; }

 private:
  VkDevice device_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer buffer_ = VK_NULL_HANDLE;
};

}  // namespace kv::vk
