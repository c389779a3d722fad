#pragma once
// Room vk/: Vulkan itself, one RAII owner per object (device, buffer, kernel,
// pass); it includes only base/.
#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "vk/handle.h"

namespace kv::vk {

struct DeviceInfo {
  uint32_t index = 0;
  std::string name;
  std::string type;  // "discrete", "integrated", "virtual", "cpu", "other"
  std::string driver;
  uint32_t api_version = 0;
  uint32_t subgroup_size = 0;
  bool subgroup_shuffle = false;  // subgroupShuffleXor in compute shaders
  bool subgroup_arithmetic = false;  // subgroupAdd and scans in compute shaders (the top-k kernels)
  // VK_NV_cooperative_matrix with 16x16x16 fp16 x fp16 + fp32 at subgroup
  // scope, shaderFloat16 and the Vulkan memory model (with device scope), on
  // 32-wide subgroups: what attention_chunk.glsl needs. (Debian 12's glslang
  // writes only NV matrices; the build rewrites them as KHR ones too.)
  bool cooperative_matrix = false;
  // Also VK_KHR_cooperative_matrix with that shape: the tensor-core kernels
  // then run their KHR versions (shaders/spirv_coopmat_khr.cpp), whose B
  // operands load in B's register layout (Device::khr_cooperative_matrix).
  bool cooperative_matrix_khr = false;
  // Also VK_NV_cooperative_matrix2 with fp16 x fp16 + fp32 at workgroup scope
  // (flexible dimensions, tensor addressing, reductions, per-element
  // operations, conversions) and what its kernels' SPIR-V needs besides
  // (bufferDeviceAddress, 16-bit storage, int16): the *_cm2 kernels, linear
  // layers and prefill attention, run where Device::cooperative_matrix2().
  bool cooperative_matrix2 = false;
  // The workgroup sizes (invocations) the driver lists for such matrices, and
  // the step of their dimensions (M, N and K alike: the largest of the three).
  std::vector<uint32_t> cooperative_matrix2_workgroups;
  uint32_t cooperative_matrix2_granularity = 0;
  // Loop iterations one invocation may complete, all its loops together, before
  // the driver ends every loop early without a word: Mesa's llvmpipe
  // (lavapipe) counts each iteration and each loop's exit test against 65535
  // (gallivm's loop limiter; tests/test_loop_limit.cpp). 0 = no such limit.
  // Kernels whose loops grow with the sequence split their work to stay under it.
  uint32_t loop_limit = 0;
  // Whether the driver's compiler pays heavily for values an invocation keeps
  // in registers across a barrier: llvmpipe runs a workgroup as coroutines
  // that suspend at each barrier, and LLVM's coroutine splitting, the first
  // time a pipeline is dispatched, took seconds a kernel where many are kept
  // (docs/perf-experiments.md). Kernels there take forms that keep such
  // values in shared memory.
  bool costly_values_across_barriers = false;
  uint64_t device_local_bytes = 0;
  uint64_t max_storage_buffer_range = 0;
  uint32_t max_shared_memory_bytes = 0;
  bool supported = false;  // has what kvscope needs (kDeviceRequirements)
};

// What `supported` asks of a device, for messages. keydiff_anchor runs
// workgroups of 1024 invocations, more than the 128 Vulkan promises (every
// desktop driver and lavapipe allow 1024).
constexpr uint32_t kMostWorkgroupInvocations = 1024;
inline constexpr const char* kDeviceRequirements =
    "Vulkan 1.2, VK_KHR_push_descriptor, a compute queue, subgroup arithmetic in compute shaders and workgroups of 1024 "
    "invocations";

struct DeviceOptions {
  std::string selector;     // "" = best; a number = index; else a name substring
  bool validation = false;  // Khronos validation layer plus a message counter
  bool sync_validation = false;  // with validation: also its synchronisation checks (hazards between dispatches)
  // Ask the driver's compiler for each kernel's statistics (registers, spills,
  // ...) through VK_KHR_pipeline_executable_properties, where the device has it.
  bool kernel_statistics = false;
  // For a front end that also draws (the viewer): extra extensions, and a queue
  // family that does graphics as well as compute.
  std::vector<std::string> instance_extensions;
  std::vector<std::string> device_extensions;
  bool graphics = false;
};

// Lists every physical device the loader sees.
std::vector<DeviceInfo> list_devices();

// Instance, chosen physical device, logical device, one compute queue and a
// command pool: what every other engine object is created from.
class Device {
 public:
  explicit Device(const DeviceOptions& options);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  VkInstance instance() const { return instance_; }
  VkDevice handle() const { return device_; }
  VkPhysicalDevice physical() const { return physical_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  VkCommandPool command_pool() const { return command_pool_.get(); }
  const DeviceInfo& info() const { return info_; }
  const VkPhysicalDeviceLimits& limits() const { return limits_; }

  // Nanoseconds per timestamp tick; 0 when the queue has no timestamps.
  double timestamp_period_ns() const { return timestamp_period_ns_; }
  uint32_t timestamp_valid_bits() const { return timestamp_valid_bits_; }

  // Memory type index with all `required` properties (and `preferred` if possible).
  uint32_t memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                       VkMemoryPropertyFlags preferred = 0) const;
  VkMemoryPropertyFlags memory_properties(uint32_t type_index) const;
  // Bytes of the heap behind a memory type.
  VkDeviceSize heap_bytes(uint32_t type_index) const;
  VkDeviceSize largest_heap_bytes() const;
  // The largest heap of device-local memory (the GPU's own; a CPU device's RAM).
  VkDeviceSize device_local_heap_bytes() const;

  UniqueCommandBuffer allocate_command_buffer() const;
  // Records with `record`, submits, and waits for completion.
  void submit_and_wait(const std::function<void(VkCommandBuffer)>& record) const;
  void submit_and_wait(VkCommandBuffer command_buffer) const;
  // Submits without waiting; `fence` (unsignalled) signals when it is done.
  UniqueFence create_fence() const;
  void submit(VkCommandBuffer command_buffer, VkFence fence) const;
  // Waits for `fence` and unsignals it for the next submit.
  void wait_and_reset(VkFence fence) const;

  PFN_vkCmdPushDescriptorSetKHR push_descriptor_set = nullptr;

  // Whether kernels capture their compiler statistics (see DeviceOptions).
  bool kernel_statistics_enabled() const { return kernel_statistics_; }
  // Kernel (name and specialization) -> the compiler's statistics, one line
  // each, for every kernel built so far; Kernel fills it.
  void add_kernel_statistics(const std::string& kernel, const std::string& statistics) const;
  std::map<std::string, std::string> kernel_statistics() const;

  // Whether kernels take their VK_KHR_cooperative_matrix versions: the device
  // has it, and no validation layer was asked for, since Debian 12's layer
  // predates the extension and reports its modules invalid (a validated
  // device runs the NV versions: the same kernels, slower on the H100).
  bool khr_cooperative_matrix() const { return khr_cooperative_matrix_; }
  // Whether the VK_NV_cooperative_matrix2 kernels may run: the device has
  // them (DeviceInfo::cooperative_matrix2) and no validation layer was asked
  // for, which (Debian 12's, 1.3.239) knows neither the extension nor its
  // SPIR-V capabilities. The engine also needs a build that wrote them
  // (KVSCOPE_COOPERATIVE_MATRIX2: engine/kernels/kernel_choice.h).
  bool cooperative_matrix2() const { return cooperative_matrix2_; }

  // The pipeline built for `key` (Kernel's: its name, SPIR-V, layout and
  // specialization), built by `build` the first time. Every method of every
  // layer builds the same kernels, and a pipeline costs the driver a compile
  // (lavapipe's took 8 of a 23 s test run, 3,478 pipelines of 281 kinds in
  // another); kernels of one kind share one, for the device's life.
  std::shared_ptr<const struct CompiledKernel> compiled_kernel(
      const std::string& key, const std::function<std::shared_ptr<const CompiledKernel>()>& build) const;

  // Messages the validation layer reported (warnings and errors) so far.
  uint64_t validation_messages() const { return validation_messages_->load(); }

 private:
  void release();

  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  UniqueCommandPool command_pool_;
  DeviceInfo info_;
  VkPhysicalDeviceLimits limits_{};
  VkPhysicalDeviceMemoryProperties memory_{};
  double timestamp_period_ns_ = 0;
  uint32_t timestamp_valid_bits_ = 0;
  std::unique_ptr<std::atomic<uint64_t>> validation_messages_;
  bool kernel_statistics_ = false;
  bool khr_cooperative_matrix_ = false;
  bool cooperative_matrix2_ = false;
  mutable std::mutex compiled_kernels_mutex_;
  mutable std::map<std::string, std::shared_ptr<const CompiledKernel>> compiled_kernels_;
  mutable std::mutex kernel_statistics_mutex_;
  mutable std::map<std::string, std::string> kernel_statistics_by_name_;
};

}  // namespace kv::vk
