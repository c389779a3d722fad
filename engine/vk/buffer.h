#pragma once
#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "vk/device.h"
#include "vk/handle.h"

namespace kv::vk {

enum class MemoryKind {
  device_local,  // where kernels read and write; may also be host-visible (CPU drivers, ReBAR)
  host_staging,  // host-visible, for transfers
};

// A storage buffer and its memory. Uploads and downloads go through a staging
// buffer unless the memory is host-visible, in which case they are plain copies.
// The Vulkan buffer is a whole number of 16-byte vectors long (at least one), so
// that a kernel may read a float array as vec4s up to its last element.
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Device& device, VkDeviceSize bytes, MemoryKind kind = MemoryKind::device_local);

  VkBuffer handle() const { return buffer_.get(); }
  VkDeviceSize bytes() const { return bytes_; }
  bool host_visible() const { return mapped_ != nullptr; }

  void upload(std::span<const std::byte> data, VkDeviceSize offset = 0);
  void download(std::span<std::byte> data, VkDeviceSize offset = 0) const;
  // Sets every 32-bit word, e.g. to a NaN pattern before a kernel runs.
  void fill(uint32_t word);

  template <typename T>
  void upload_values(std::span<const T> values) {
    upload(std::as_bytes(values));
  }
  template <typename T>
  std::vector<T> download_values(size_t count) const {
    std::vector<T> values(count);
    download(std::as_writable_bytes(std::span<T>(values)));
    return values;
  }

 private:
  const Device* device_ = nullptr;
  VkDeviceSize bytes_ = 0;
  UniqueBuffer buffer_;
  UniqueMemory memory_;
  std::byte* mapped_ = nullptr;
};

// `buffer`, reallocated when it holds fewer than `bytes` (contents are not kept):
// scratch that grows to the largest request and is then reused.
Buffer& grown(const Device& device, Buffer& buffer, VkDeviceSize bytes);

}  // namespace kv::vk
