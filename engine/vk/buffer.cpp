#include "vk/buffer.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/error.h"
#include "vk/check.h"

namespace kv::vk {
namespace {

// Staging copies go in pieces so that a multi-GiB tensor needs no equal host buffer.
constexpr VkDeviceSize kStagingPiece = VkDeviceSize(64) << 20;

void check_range(const Buffer& buffer, VkDeviceSize offset, size_t bytes, const char* what) {
  if (offset > buffer.bytes() || bytes > buffer.bytes() - offset)
    throw DeviceError(std::string(what) + ": " + std::to_string(bytes) + " bytes at offset " +
                      std::to_string(offset) + " exceed a buffer of " + std::to_string(buffer.bytes()));
}

}  // namespace

Buffer::Buffer(const Device& device, VkDeviceSize bytes, MemoryKind kind)
    : device_(&device), bytes_(bytes) {
  if (bytes > device.largest_heap_bytes())
    throw InputError("a buffer of " + std::to_string(bytes >> 20) + " MiB is larger than any memory heap of " +
                     device.info().name + " (largest " + std::to_string(device.largest_heap_bytes() >> 20) + " MiB)");
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = std::max<VkDeviceSize>((bytes + 15) / 16 * 16, 16);  // Vulkan forbids empty buffers
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer raw_buffer = VK_NULL_HANDLE;
  KV_VK_CHECK(vkCreateBuffer(device.handle(), &info, nullptr, &raw_buffer));
  buffer_ = UniqueBuffer(device.handle(), raw_buffer);

  VkMemoryRequirements requirements{};
  vkGetBufferMemoryRequirements(device.handle(), raw_buffer, &requirements);
  uint32_t type = kind == MemoryKind::device_local
                      ? device.memory_type(requirements.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
                      : device.memory_type(requirements.memoryTypeBits,
                                           VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                           VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  // Sizes are checked before allocating, so that a capture too large for the
  // device is a one-line error with both numbers, never a driver failure.
  if (kind == MemoryKind::device_local && info.size > device.limits().maxStorageBufferRange)
    throw InputError("a buffer of " + std::to_string(bytes >> 20) + " MiB exceeds the largest storage buffer " +
                     device.info().name + " binds (" + std::to_string(device.limits().maxStorageBufferRange >> 20) +
                     " MiB); use fewer tokens or heads per capture layer");
  if (requirements.size > device.heap_bytes(type))
    throw InputError("a buffer of " + std::to_string(requirements.size >> 20) + " MiB does not fit the device's " +
                     std::to_string(device.heap_bytes(type) >> 20) + " MiB memory heap (capture too large for " +
                     device.info().name + ")");
  VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  allocate.allocationSize = requirements.size;
  allocate.memoryTypeIndex = type;
  VkDeviceMemory raw_memory = VK_NULL_HANDLE;
  VkResult result = vkAllocateMemory(device.handle(), &allocate, nullptr, &raw_memory);
  if (result != VK_SUCCESS)
    throw DeviceError("out of device memory: a buffer of " + std::to_string(requirements.size >> 20) + " MiB (heap " +
                      std::to_string(device.heap_bytes(type) >> 20) + " MiB, shared with what is already allocated): " +
                      result_name(result));
  memory_ = UniqueMemory(device.handle(), raw_memory);
  KV_VK_CHECK(vkBindBufferMemory(device.handle(), raw_buffer, raw_memory, 0));

  const VkMemoryPropertyFlags coherent = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  if ((device.memory_properties(type) & coherent) == coherent) {
    void* pointer = nullptr;
    KV_VK_CHECK(vkMapMemory(device.handle(), raw_memory, 0, VK_WHOLE_SIZE, 0, &pointer));
    mapped_ = static_cast<std::byte*>(pointer);
  }
}

void Buffer::upload(std::span<const std::byte> data, VkDeviceSize offset) {
  check_range(*this, offset, data.size(), "Buffer::upload");
  if (mapped_) {
    std::memcpy(mapped_ + offset, data.data(), data.size());
    return;
  }
  Buffer staging(*device_, std::min<VkDeviceSize>(data.size(), kStagingPiece), MemoryKind::host_staging);
  for (size_t done = 0; done < data.size();) {
    size_t piece = std::min<size_t>(data.size() - done, staging.bytes());
    std::memcpy(staging.mapped_, data.data() + done, piece);
    device_->submit_and_wait([&](VkCommandBuffer command_buffer) {
      VkBufferCopy region{0, offset + done, piece};
      vkCmdCopyBuffer(command_buffer, staging.handle(), handle(), 1, &region);
    });
    done += piece;
  }
}

void Buffer::download(std::span<std::byte> data, VkDeviceSize offset) const {
  check_range(*this, offset, data.size(), "Buffer::download");
  if (mapped_) {
    std::memcpy(data.data(), mapped_ + offset, data.size());
    return;
  }
  Buffer staging(*device_, std::min<VkDeviceSize>(data.size(), kStagingPiece), MemoryKind::host_staging);
  for (size_t done = 0; done < data.size();) {
    size_t piece = std::min<size_t>(data.size() - done, staging.bytes());
    device_->submit_and_wait([&](VkCommandBuffer command_buffer) {
      VkBufferCopy region{offset + done, 0, piece};
      vkCmdCopyBuffer(command_buffer, handle(), staging.handle(), 1, &region);
    });
    std::memcpy(data.data() + done, staging.mapped_, piece);
    done += piece;
  }
}

void Buffer::fill(uint32_t word) {
  device_->submit_and_wait([&](VkCommandBuffer command_buffer) {
    vkCmdFillBuffer(command_buffer, handle(), 0, VK_WHOLE_SIZE, word);
  });
}

Buffer& grown(const Device& device, Buffer& buffer, VkDeviceSize bytes) {
  if (buffer.bytes() < bytes) buffer = Buffer(device, bytes);
  return buffer;
}

}  // namespace kv::vk
