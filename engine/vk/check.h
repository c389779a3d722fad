#pragma once
#include <vulkan/vulkan.h>

#include <string_view>

namespace kv::vk {

const char* result_name(VkResult result);

// Throws DeviceError naming the call and its VkResult.
void fail(std::string_view call, VkResult result);

inline void check(VkResult result, std::string_view call) {
  if (result != VK_SUCCESS) fail(call, result);
}

}  // namespace kv::vk

#define KV_VK_CHECK(call) ::kv::vk::check((call), #call)
