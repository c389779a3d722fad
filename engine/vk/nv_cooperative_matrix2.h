#pragma once
// VK_NV_cooperative_matrix2, which Debian 12's Vulkan headers (1.3.239)
// predate: the values and structures kvscope uses, as the registry defines them.
#include <vulkan/vulkan.h>

#include <cstdint>

namespace kv::vk::nv2 {

inline constexpr const char* kCooperativeMatrix2Extension = "VK_NV_cooperative_matrix2";
inline constexpr VkStructureType kFeaturesType = VkStructureType(1000593000);
inline constexpr VkStructureType kFlexibleDimensionsPropertiesType = VkStructureType(1000593001);
inline constexpr VkStructureType kPropertiesType = VkStructureType(1000593002);
inline constexpr uint32_t kScopeWorkgroup = 2;  // VkScopeKHR

struct Features {  // VkPhysicalDeviceCooperativeMatrix2FeaturesNV
  VkStructureType sType = kFeaturesType;
  void* pNext = nullptr;
  VkBool32 cooperativeMatrixWorkgroupScope = VK_FALSE;
  VkBool32 cooperativeMatrixFlexibleDimensions = VK_FALSE;
  VkBool32 cooperativeMatrixReductions = VK_FALSE;
  VkBool32 cooperativeMatrixConversions = VK_FALSE;
  VkBool32 cooperativeMatrixPerElementOperations = VK_FALSE;
  VkBool32 cooperativeMatrixTensorAddressing = VK_FALSE;
  VkBool32 cooperativeMatrixBlockLoads = VK_FALSE;
};

struct Properties {  // VkPhysicalDeviceCooperativeMatrix2PropertiesNV
  VkStructureType sType = kPropertiesType;
  void* pNext = nullptr;
  uint32_t cooperativeMatrixWorkgroupScopeMaxWorkgroupSize = 0;
  uint32_t cooperativeMatrixFlexibleDimensionsMaxDimension = 0;
  uint32_t cooperativeMatrixWorkgroupScopeReservedSharedMemory = 0;
};

struct FlexibleDimensionsProperties {  // VkCooperativeMatrixFlexibleDimensionsPropertiesNV
  VkStructureType sType = kFlexibleDimensionsPropertiesType;
  void* pNext = nullptr;
  uint32_t MGranularity = 0, NGranularity = 0, KGranularity = 0;
  uint32_t AType = 0, BType = 0, CType = 0, ResultType = 0;  // VkComponentTypeKHR
  VkBool32 saturatingAccumulation = VK_FALSE;
  uint32_t scope = 0;  // VkScopeKHR
  uint32_t workgroupInvocations = 0;
};

using GetFlexibleDimensionsProperties = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, FlexibleDimensionsProperties*);

}  // namespace kv::vk::nv2
