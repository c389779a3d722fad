#include "vk/check.h"

#include <string>

#include "base/error.h"

namespace kv::vk {

const char* result_name(VkResult result) {
  switch (result) {
#define KV_CASE(r) \
  case r:          \
    return #r;
    KV_CASE(VK_SUCCESS)
    KV_CASE(VK_NOT_READY)
    KV_CASE(VK_TIMEOUT)
    KV_CASE(VK_INCOMPLETE)
    KV_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    KV_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    KV_CASE(VK_ERROR_INITIALIZATION_FAILED)
    KV_CASE(VK_ERROR_DEVICE_LOST)
    KV_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    KV_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    KV_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    KV_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    KV_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    KV_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    KV_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    KV_CASE(VK_ERROR_FRAGMENTED_POOL)
    KV_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    KV_CASE(VK_ERROR_INVALID_SHADER_NV)
    KV_CASE(VK_ERROR_UNKNOWN)
#undef KV_CASE
    default:
      return "VkResult(unknown)";
  }
}

void fail(std::string_view call, VkResult result) {
  throw DeviceError(std::string(call) + " failed: " + result_name(result) + " (" +
                    std::to_string(static_cast<int>(result)) + ")");
}

}  // namespace kv::vk
