#pragma once
#include <vulkan/vulkan.h>

#include <utility>

namespace kv::vk {

// The one owner of a Vulkan object created from a parent (a VkDevice or a
// VkInstance): destroys it with `Destroy` exactly once. Every vkDestroy*/vkFree*
// of such objects lives here.
template <typename Parent, typename Handle, void (*Destroy)(Parent, Handle, const VkAllocationCallbacks*)>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  UniqueHandle(Parent parent, Handle handle) : parent_(parent), handle_(handle) {}
  UniqueHandle(UniqueHandle&& other) noexcept
      : parent_(other.parent_), handle_(std::exchange(other.handle_, VK_NULL_HANDLE)) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) {
      reset();
      parent_ = other.parent_;
      handle_ = std::exchange(other.handle_, VK_NULL_HANDLE);
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  ~UniqueHandle() { reset(); }

  void reset() {
    if (handle_ != VK_NULL_HANDLE) Destroy(parent_, handle_, nullptr);
    handle_ = VK_NULL_HANDLE;
  }
  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != VK_NULL_HANDLE; }

 private:
  Parent parent_ = VK_NULL_HANDLE;
  Handle handle_ = VK_NULL_HANDLE;
};

template <typename Handle, void (*Destroy)(VkDevice, Handle, const VkAllocationCallbacks*)>
using DeviceHandle = UniqueHandle<VkDevice, Handle, Destroy>;

using UniqueBuffer = DeviceHandle<VkBuffer, vkDestroyBuffer>;
using UniqueMemory = DeviceHandle<VkDeviceMemory, vkFreeMemory>;
using UniqueShaderModule = DeviceHandle<VkShaderModule, vkDestroyShaderModule>;
using UniqueDescriptorSetLayout = DeviceHandle<VkDescriptorSetLayout, vkDestroyDescriptorSetLayout>;
using UniquePipelineLayout = DeviceHandle<VkPipelineLayout, vkDestroyPipelineLayout>;
using UniquePipeline = DeviceHandle<VkPipeline, vkDestroyPipeline>;
using UniqueCommandPool = DeviceHandle<VkCommandPool, vkDestroyCommandPool>;
using UniqueQueryPool = DeviceHandle<VkQueryPool, vkDestroyQueryPool>;
using UniqueFence = DeviceHandle<VkFence, vkDestroyFence>;
using UniqueSemaphore = DeviceHandle<VkSemaphore, vkDestroySemaphore>;
using UniqueImage = DeviceHandle<VkImage, vkDestroyImage>;
using UniqueImageView = DeviceHandle<VkImageView, vkDestroyImageView>;
using UniqueRenderPass = DeviceHandle<VkRenderPass, vkDestroyRenderPass>;
using UniqueFramebuffer = DeviceHandle<VkFramebuffer, vkDestroyFramebuffer>;
using UniqueDescriptorPool = DeviceHandle<VkDescriptorPool, vkDestroyDescriptorPool>;
using UniqueSwapchain = DeviceHandle<VkSwapchainKHR, vkDestroySwapchainKHR>;
using UniqueSurface = UniqueHandle<VkInstance, VkSurfaceKHR, vkDestroySurfaceKHR>;

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
