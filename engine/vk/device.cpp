#include "vk/device.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "vk/check.h"
#include "vk/khr_cooperative_matrix.h"
#include "vk/nv_cooperative_matrix2.h"

namespace kv::vk {
namespace {

const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool has_layer(const char* name) {
  uint32_t count = 0;
  vkEnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vkEnumerateInstanceLayerProperties(&count, layers.data());
  return std::any_of(layers.begin(), layers.end(),
                     [&](const VkLayerProperties& l) { return std::strcmp(l.layerName, name) == 0; });
}

bool has_device_extension(VkPhysicalDevice physical, const char* name) {
  uint32_t count = 0;
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> extensions(count);
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, extensions.data());
  return std::any_of(extensions.begin(), extensions.end(), [&](const VkExtensionProperties& e) {
    return std::strcmp(e.extensionName, name) == 0;
  });
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT, VkDebugUtilsMessageTypeFlagsEXT,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  static_cast<std::atomic<uint64_t>*>(user)->fetch_add(1);
  std::fprintf(stderr, "[vulkan validation] %s\n", data->pMessage);
  return VK_FALSE;
}

VkDebugUtilsMessengerCreateInfoEXT messenger_info(std::atomic<uint64_t>* counter) {
  VkDebugUtilsMessengerCreateInfoEXT info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  info.pfnUserCallback = on_validation_message;
  info.pUserData = counter;
  return info;
}

// The caller owns the returned instance.
VkInstance create_instance(bool validation, bool sync_validation, std::atomic<uint64_t>* counter,
                           const std::vector<std::string>& extra_extensions = {}) {
  uint32_t loader_version = VK_API_VERSION_1_0;
  vkEnumerateInstanceVersion(&loader_version);
  if (loader_version < VK_API_VERSION_1_2)
    throw DeviceError("the Vulkan loader supports only 1.0/1.1; kvscope needs Vulkan 1.2");

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "kvscope";
  app.apiVersion = std::min<uint32_t>(loader_version, VK_API_VERSION_1_3);

  std::vector<const char*> layers;
  std::vector<const char*> extensions;
  for (const std::string& e : extra_extensions) extensions.push_back(e.c_str());
  VkDebugUtilsMessengerCreateInfoEXT debug = messenger_info(counter);
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  if (validation) {
    if (!has_layer(kValidationLayer))
      throw DeviceError(std::string(kValidationLayer) +
                        " is not installed (Debian: apt-get install vulkan-validationlayers)");
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    info.pNext = &debug;  // also reports problems inside vkCreateInstance
  }
  const VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  if (validation && sync_validation) {
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = &sync;
    features.pNext = info.pNext;
    info.pNext = &features;
    extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
  }
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  VkInstance instance = VK_NULL_HANDLE;
  KV_VK_CHECK(vkCreateInstance(&info, nullptr, &instance));
  return instance;
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance instance) {
  uint32_t count = 0;
  KV_VK_CHECK(vkEnumeratePhysicalDevices(instance, &count, nullptr));
  std::vector<VkPhysicalDevice> devices(count);
  KV_VK_CHECK(vkEnumeratePhysicalDevices(instance, &count, devices.data()));
  return devices;
}

const char* type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

int type_rank(const std::string& type) {
  if (type == "discrete") return 0;
  if (type == "integrated") return 1;
  if (type == "virtual") return 2;
  if (type == "cpu") return 3;
  return 4;
}

// Index of a queue family with compute and timestamps; prefers one that can
// also do graphics, which every vendor exposes as its main queue.
int compute_queue_family(VkPhysicalDevice physical, uint32_t* timestamp_bits) {
  uint32_t count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, families.data());
  int best = -1;
  for (uint32_t i = 0; i < count; ++i) {
    if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    bool graphics = families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT;
    if (best < 0 || (graphics && !(families[best].queueFlags & VK_QUEUE_GRAPHICS_BIT))) best = int(i);
  }
  if (best >= 0 && timestamp_bits) *timestamp_bits = families[best].timestampValidBits;
  return best;
}

// The matrix shapes a cooperative-matrix properties query lists (the NV and
// KHR queries take the same arguments), each entry starting as `blank`.
template <typename Properties, typename Query>
std::vector<Properties> listed_shapes(Query query, VkPhysicalDevice physical, const Properties& blank) {
  uint32_t count = 0;
  query(physical, &count, nullptr);
  std::vector<Properties> shapes(count, blank);
  query(physical, &count, shapes.data());
  return shapes;
}

bool has_fp16_cooperative_matrix(VkInstance instance, VkPhysicalDevice physical, uint32_t subgroup_size) {
  if (subgroup_size != 32 || !has_device_extension(physical, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME)) return false;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV cooperative{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceVulkan12Features vulkan12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  vulkan12.pNext = &cooperative;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &vulkan12;
  vkGetPhysicalDeviceFeatures2(physical, &features);
  if (!cooperative.cooperativeMatrix || !vulkan12.shaderFloat16 || !vulkan12.vulkanMemoryModel ||
      !vulkan12.vulkanMemoryModelDeviceScope)
    return false;
  auto properties = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  if (!properties) return false;
  const auto shapes =
      listed_shapes(properties, physical, VkCooperativeMatrixPropertiesNV{VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
  return std::any_of(shapes.begin(), shapes.end(), [](const VkCooperativeMatrixPropertiesNV& m) {
    return m.MSize == 16 && m.NSize == 16 && m.KSize == 16 && m.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
           m.BType == VK_COMPONENT_TYPE_FLOAT16_NV && m.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
           m.DType == VK_COMPONENT_TYPE_FLOAT32_NV && m.scope == VK_SCOPE_SUBGROUP_NV;
  });
}

// has_fp16_cooperative_matrix's shape through VK_KHR_cooperative_matrix.
bool has_fp16_cooperative_matrix_khr(VkInstance instance, VkPhysicalDevice physical) {
  if (!has_device_extension(physical, khr::kCooperativeMatrixExtension)) return false;
  khr::CooperativeMatrixFeatures cooperative;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &cooperative;
  vkGetPhysicalDeviceFeatures2(physical, &features);
  auto properties = reinterpret_cast<khr::GetCooperativeMatrixProperties>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  if (!cooperative.cooperativeMatrix || !properties) return false;
  const auto shapes = listed_shapes(properties, physical, khr::CooperativeMatrixProperties{});
  return std::any_of(shapes.begin(), shapes.end(), [](const khr::CooperativeMatrixProperties& m) {
    return m.MSize == 16 && m.NSize == 16 && m.KSize == 16 && m.AType == khr::kComponentFloat16 &&
           m.BType == khr::kComponentFloat16 && m.CType == khr::kComponentFloat32 &&
           m.ResultType == khr::kComponentFloat32 && m.scope == khr::kScopeSubgroup;
  });
}

// VK_NV_cooperative_matrix2 as DeviceInfo::cooperative_matrix2 describes it:
// the fp16 x fp16 + fp32 workgroup-scope entries' workgroup sizes and their
// largest granularity, or nothing.
void describe_cooperative_matrix2(VkInstance instance, VkPhysicalDevice physical, DeviceInfo& info) {
  if (!info.cooperative_matrix_khr || !has_device_extension(physical, nv2::kCooperativeMatrix2Extension)) return;
  nv2::Features cooperative;
  VkPhysicalDeviceVulkan12Features vulkan12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features vulkan11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  vulkan12.pNext = &cooperative;
  vulkan11.pNext = &vulkan12;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &vulkan11;
  vkGetPhysicalDeviceFeatures2(physical, &features);
  if (!cooperative.cooperativeMatrixWorkgroupScope || !cooperative.cooperativeMatrixFlexibleDimensions ||
      !cooperative.cooperativeMatrixReductions || !cooperative.cooperativeMatrixConversions ||
      !cooperative.cooperativeMatrixPerElementOperations || !cooperative.cooperativeMatrixTensorAddressing ||
      !vulkan12.bufferDeviceAddress || !vulkan11.storageBuffer16BitAccess || !features.features.shaderInt16)
    return;
  auto properties = reinterpret_cast<nv2::GetFlexibleDimensionsProperties>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV"));
  if (!properties) return;
  for (const nv2::FlexibleDimensionsProperties& m : listed_shapes(properties, physical, nv2::FlexibleDimensionsProperties{})) {
    if (m.AType != khr::kComponentFloat16 || m.BType != khr::kComponentFloat16 || m.CType != khr::kComponentFloat32 ||
        m.ResultType != khr::kComponentFloat32 || m.scope != nv2::kScopeWorkgroup)
      continue;
    info.cooperative_matrix2_workgroups.push_back(m.workgroupInvocations);
    info.cooperative_matrix2_granularity =
        std::max({info.cooperative_matrix2_granularity, m.MGranularity, m.NGranularity, m.KGranularity});
  }
  std::sort(info.cooperative_matrix2_workgroups.begin(), info.cooperative_matrix2_workgroups.end());
  info.cooperative_matrix2 = !info.cooperative_matrix2_workgroups.empty();
}

DeviceInfo describe(VkInstance instance, VkPhysicalDevice physical, uint32_t index) {
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  driver.pNext = &subgroup;
  VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  properties.pNext = &driver;
  vkGetPhysicalDeviceProperties2(physical, &properties);
  VkPhysicalDeviceMemoryProperties memory{};
  vkGetPhysicalDeviceMemoryProperties(physical, &memory);

  DeviceInfo info;
  info.index = index;
  info.name = properties.properties.deviceName;
  info.type = type_name(properties.properties.deviceType);
  info.driver = std::string(driver.driverName) + " " + driver.driverInfo;
  info.api_version = properties.properties.apiVersion;
  info.subgroup_size = subgroup.subgroupSize;
  info.subgroup_shuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
  const bool compute_subgroups = subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT;
  info.subgroup_arithmetic = compute_subgroups && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  info.cooperative_matrix = has_fp16_cooperative_matrix(instance, physical, info.subgroup_size);
  info.cooperative_matrix_khr = info.cooperative_matrix && has_fp16_cooperative_matrix_khr(instance, physical);
  describe_cooperative_matrix2(instance, physical, info);
  if (driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE) {
    info.loop_limit = 65535;
    info.costly_values_across_barriers = true;
  }
  for (uint32_t i = 0; i < memory.memoryHeapCount; ++i)
    if (memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      info.device_local_bytes = std::max<uint64_t>(info.device_local_bytes, memory.memoryHeaps[i].size);
  const VkPhysicalDeviceLimits& limits = properties.properties.limits;
  info.max_storage_buffer_range = limits.maxStorageBufferRange;
  info.max_shared_memory_bytes = limits.maxComputeSharedMemorySize;
  const uint32_t most_workgroup_invocations = std::min(limits.maxComputeWorkGroupInvocations, limits.maxComputeWorkGroupSize[0]);
  info.supported = info.api_version >= VK_API_VERSION_1_2 && info.subgroup_arithmetic &&
                   most_workgroup_invocations >= kMostWorkgroupInvocations &&
                   has_device_extension(physical, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME) &&
                   compute_queue_family(physical, nullptr) >= 0;
  return info;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Picks by index, by name substring, or the best type present.
uint32_t choose(const std::vector<DeviceInfo>& infos, const std::string& selector) {
  if (infos.empty()) throw DeviceError("no Vulkan device found (is a driver such as mesa-vulkan-drivers installed?)");
  if (!selector.empty()) {
    bool numeric = std::all_of(selector.begin(), selector.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    for (const DeviceInfo& info : infos) {
      bool match = numeric ? std::to_string(info.index) == selector
                           : lower(info.name).find(lower(selector)) != std::string::npos;
      if (!match) continue;
      if (!info.supported) throw DeviceError("device '" + info.name + "' lacks what kvscope needs: " + kDeviceRequirements);
      return info.index;
    }
    throw InputError("no Vulkan device matches '" + selector + "' (see 'kvscope devices')", "device");
  }
  const DeviceInfo* best = nullptr;
  for (const DeviceInfo& info : infos)
    if (info.supported && (!best || type_rank(info.type) < type_rank(best->type))) best = &info;
  if (!best) throw DeviceError(std::string("no Vulkan device has what kvscope needs: ") + kDeviceRequirements);
  return best->index;
}

}  // namespace

std::vector<DeviceInfo> list_devices() {
  // The owner of a short-lived instance that only enumerates.
  struct ScopedInstance {
    VkInstance handle;
    ~ScopedInstance() { vkDestroyInstance(handle, nullptr); }
  } instance{create_instance(false, false, nullptr)};
  std::vector<DeviceInfo> infos;
  std::vector<VkPhysicalDevice> devices = physical_devices(instance.handle);
  for (uint32_t i = 0; i < devices.size(); ++i) infos.push_back(describe(instance.handle, devices[i], i));
  return infos;
}

Device::Device(const DeviceOptions& options)
    : validation_messages_(std::make_unique<std::atomic<uint64_t>>(0)) {
  instance_ = create_instance(options.validation, options.sync_validation, validation_messages_.get(),
                              options.instance_extensions);
  try {
    if (options.validation) {
      auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
      VkDebugUtilsMessengerCreateInfoEXT info = messenger_info(validation_messages_.get());
      KV_VK_CHECK(create(instance_, &info, nullptr, &messenger_));
    }
    std::vector<VkPhysicalDevice> devices = physical_devices(instance_);
    std::vector<DeviceInfo> infos;
    for (uint32_t i = 0; i < devices.size(); ++i) infos.push_back(describe(instance_, devices[i], i));
    uint32_t chosen = choose(infos, options.selector);
    physical_ = devices[chosen];
    info_ = infos[chosen];

    VkPhysicalDeviceProperties properties{};
    vkGetPhysicalDeviceProperties(physical_, &properties);
    limits_ = properties.limits;
    vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
    queue_family_ = static_cast<uint32_t>(compute_queue_family(physical_, &timestamp_valid_bits_));
    if (options.graphics) {
      uint32_t count = 0;
      vkGetPhysicalDeviceQueueFamilyProperties(physical_, &count, nullptr);
      std::vector<VkQueueFamilyProperties> families(count);
      vkGetPhysicalDeviceQueueFamilyProperties(physical_, &count, families.data());
      if (!(families[queue_family_].queueFlags & VK_QUEUE_GRAPHICS_BIT))
        throw DeviceError("device '" + info_.name + "' has no queue that does graphics and compute");
    }
    timestamp_period_ns_ = timestamp_valid_bits_ ? properties.limits.timestampPeriod : 0.0;

    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue_info.queueFamilyIndex = queue_family_;
    queue_info.queueCount = 1;
    queue_info.pQueuePriorities = &priority;
    std::vector<const char*> extensions{VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    for (const std::string& e : options.device_extensions) extensions.push_back(e.c_str());
    VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable_info{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    kernel_statistics_ = options.kernel_statistics &&
                         has_device_extension(physical_, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    if (kernel_statistics_) {
      extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
      executable_info.pipelineExecutableInfo = VK_TRUE;
      executable_info.pNext = const_cast<void*>(device_info.pNext);
      device_info.pNext = &executable_info;
    }
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cooperative{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    VkPhysicalDeviceVulkan12Features vulkan12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    if (info_.cooperative_matrix) {
      extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
      cooperative.cooperativeMatrix = VK_TRUE;
      vulkan12.shaderFloat16 = VK_TRUE;
      vulkan12.vulkanMemoryModel = VK_TRUE;
      vulkan12.vulkanMemoryModelDeviceScope = VK_TRUE;  // the other kernels' buffer atomics are device-scoped
      vulkan12.pNext = &cooperative;
      cooperative.pNext = const_cast<void*>(device_info.pNext);
      device_info.pNext = &vulkan12;
    }
    khr::CooperativeMatrixFeatures cooperative_khr;
    khr_cooperative_matrix_ = info_.cooperative_matrix_khr && !options.validation;
    if (khr_cooperative_matrix_) {
      extensions.push_back(khr::kCooperativeMatrixExtension);
      cooperative_khr.cooperativeMatrix = VK_TRUE;
      cooperative_khr.pNext = const_cast<void*>(device_info.pNext);
      device_info.pNext = &cooperative_khr;
    }
    // The cooperative-matrix-2 kernels: their extension, the KHR one it
    // builds on, and the features their SPIR-V declares.
    nv2::Features cooperative2;
    VkPhysicalDeviceVulkan11Features vulkan11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    cooperative_matrix2_ = info_.cooperative_matrix2 && khr_cooperative_matrix_;
    if (cooperative_matrix2_) {
      extensions.push_back(nv2::kCooperativeMatrix2Extension);
      cooperative2.cooperativeMatrixWorkgroupScope = VK_TRUE;
      cooperative2.cooperativeMatrixFlexibleDimensions = VK_TRUE;
      cooperative2.cooperativeMatrixReductions = VK_TRUE;
      cooperative2.cooperativeMatrixConversions = VK_TRUE;
      cooperative2.cooperativeMatrixPerElementOperations = VK_TRUE;
      cooperative2.cooperativeMatrixTensorAddressing = VK_TRUE;
      vulkan12.bufferDeviceAddress = VK_TRUE;
      vulkan11.storageBuffer16BitAccess = VK_TRUE;
      features2.features.shaderInt16 = VK_TRUE;
      cooperative2.pNext = const_cast<void*>(device_info.pNext);
      vulkan11.pNext = &cooperative2;
      features2.pNext = &vulkan11;
      device_info.pNext = &features2;
    }
    device_info.queueCreateInfoCount = 1;
    device_info.pQueueCreateInfos = &queue_info;
    device_info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    device_info.ppEnabledExtensionNames = extensions.data();
    KV_VK_CHECK(vkCreateDevice(physical_, &device_info, nullptr, &device_));
    vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
    push_descriptor_set = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
        vkGetDeviceProcAddr(device_, "vkCmdPushDescriptorSetKHR"));
    if (!push_descriptor_set) throw DeviceError("vkGetDeviceProcAddr(vkCmdPushDescriptorSetKHR) returned null");

    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = queue_family_;
    VkCommandPool pool = VK_NULL_HANDLE;
    KV_VK_CHECK(vkCreateCommandPool(device_, &pool_info, nullptr, &pool));
    command_pool_ = UniqueCommandPool(device_, pool);
  } catch (...) {
    release();
    throw;
  }
}

Device::~Device() { release(); }

// Destroys what the constructor created, in reverse order; safe on a partly built Device.
void Device::release() {
  if (device_) vkDeviceWaitIdle(device_);
  compiled_kernels_.clear();
  command_pool_.reset();
  if (device_) vkDestroyDevice(device_, nullptr);
  if (messenger_) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    destroy(instance_, messenger_, nullptr);
  }
  vkDestroyInstance(instance_, nullptr);
}

std::shared_ptr<const CompiledKernel> Device::compiled_kernel(
    const std::string& key, const std::function<std::shared_ptr<const CompiledKernel>()>& build) const {
  std::lock_guard<std::mutex> lock(compiled_kernels_mutex_);
  std::shared_ptr<const CompiledKernel>& compiled = compiled_kernels_[key];
  if (!compiled) compiled = build();
  return compiled;
}

void Device::add_kernel_statistics(const std::string& kernel, const std::string& statistics) const {
  std::lock_guard<std::mutex> lock(kernel_statistics_mutex_);
  kernel_statistics_by_name_[kernel] = statistics;
}

std::map<std::string, std::string> Device::kernel_statistics() const {
  std::lock_guard<std::mutex> lock(kernel_statistics_mutex_);
  return kernel_statistics_by_name_;
}

uint32_t Device::memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                             VkMemoryPropertyFlags preferred) const {
  for (VkMemoryPropertyFlags want : {required | preferred, required}) {
    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
      if ((type_bits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & want) == want) return i;
  }
  throw DeviceError("no Vulkan memory type with the required properties");
}

VkDeviceSize Device::heap_bytes(uint32_t type_index) const {
  return memory_.memoryHeaps[memory_.memoryTypes[type_index].heapIndex].size;
}

VkDeviceSize Device::largest_heap_bytes() const {
  VkDeviceSize largest = 0;
  for (uint32_t i = 0; i < memory_.memoryHeapCount; ++i) largest = std::max(largest, memory_.memoryHeaps[i].size);
  return largest;
}

VkDeviceSize Device::device_local_heap_bytes() const {
  VkDeviceSize largest = 0;
  for (uint32_t i = 0; i < memory_.memoryHeapCount; ++i)
    if (memory_.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) largest = std::max(largest, memory_.memoryHeaps[i].size);
  return largest ? largest : largest_heap_bytes();
}

VkMemoryPropertyFlags Device::memory_properties(uint32_t type_index) const {
  return memory_.memoryTypes[type_index].propertyFlags;
}

UniqueCommandBuffer Device::allocate_command_buffer() const {
  VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  info.commandPool = command_pool_.get();
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  VkCommandBuffer buffer = VK_NULL_HANDLE;
  KV_VK_CHECK(vkAllocateCommandBuffers(device_, &info, &buffer));
  return UniqueCommandBuffer(device_, command_pool_.get(), buffer);
}

UniqueFence Device::create_fence() const {
  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence = VK_NULL_HANDLE;
  KV_VK_CHECK(vkCreateFence(device_, &fence_info, nullptr, &fence));
  return UniqueFence(device_, fence);
}

void Device::submit(VkCommandBuffer command_buffer, VkFence fence) const {
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &command_buffer;
  KV_VK_CHECK(vkQueueSubmit(queue_, 1, &submit, fence));
}

void Device::wait_and_reset(VkFence fence) const {
  KV_VK_CHECK(vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_MAX));
  KV_VK_CHECK(vkResetFences(device_, 1, &fence));
}

void Device::submit_and_wait(VkCommandBuffer command_buffer) const {
  const UniqueFence fence = create_fence();
  submit(command_buffer, fence.get());
  wait_and_reset(fence.get());
}

void Device::submit_and_wait(const std::function<void(VkCommandBuffer)>& record) const {
  UniqueCommandBuffer command_buffer = allocate_command_buffer();
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  KV_VK_CHECK(vkBeginCommandBuffer(command_buffer.get(), &begin));
  record(command_buffer.get());
  KV_VK_CHECK(vkEndCommandBuffer(command_buffer.get()));
  submit_and_wait(command_buffer.get());
}

}  // namespace kv::vk
