#pragma once
// VK_KHR_cooperative_matrix, which Debian 12's Vulkan headers (1.3.239)
// predate: the values and structures kvscope uses, as the registry defines them.
#include <vulkan/vulkan.h>

#include <cstdint>

namespace kv::vk::khr {

inline constexpr const char* kCooperativeMatrixExtension = "VK_KHR_cooperative_matrix";
inline constexpr VkStructureType kCooperativeMatrixFeaturesType = VkStructureType(1000506000);
inline constexpr VkStructureType kCooperativeMatrixPropertiesType = VkStructureType(1000506001);
inline constexpr uint32_t kComponentFloat16 = 0, kComponentFloat32 = 1;  // VkComponentTypeKHR
inline constexpr uint32_t kScopeSubgroup = 3;                             // VkScopeKHR

struct CooperativeMatrixFeatures {  // VkPhysicalDeviceCooperativeMatrixFeaturesKHR
  VkStructureType sType = kCooperativeMatrixFeaturesType;
  void* pNext = nullptr;
  VkBool32 cooperativeMatrix = VK_FALSE;
  VkBool32 cooperativeMatrixRobustBufferAccess = VK_FALSE;
};

struct CooperativeMatrixProperties {  // VkCooperativeMatrixPropertiesKHR
  VkStructureType sType = kCooperativeMatrixPropertiesType;
  void* pNext = nullptr;
  uint32_t MSize = 0, NSize = 0, KSize = 0;
  uint32_t AType = 0, BType = 0, CType = 0, ResultType = 0;
  VkBool32 saturatingAccumulation = VK_FALSE;
  uint32_t scope = 0;
};

using GetCooperativeMatrixProperties = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, CooperativeMatrixProperties*);

}  // namespace kv::vk::khr
