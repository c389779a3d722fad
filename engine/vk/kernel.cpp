#include "vk/kernel.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "vk/buffer.h"
#include "vk/check.h"

namespace kv::vk {
namespace {

// "name=value" for each statistic of each executable the driver compiled the pipeline into.
std::string compiler_statistics(VkDevice device, VkPipeline pipeline) {
  auto properties = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      vkGetDeviceProcAddr(device, "vkGetPipelineExecutablePropertiesKHR"));
  auto statistics = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(device, "vkGetPipelineExecutableStatisticsKHR"));
  if (!properties || !statistics) return "(no statistics entry points)";
  VkPipelineInfoKHR pipeline_info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  pipeline_info.pipeline = pipeline;
  uint32_t executables = 0;
  properties(device, &pipeline_info, &executables, nullptr);
  std::string text;
  for (uint32_t e = 0; e < executables; ++e) {
    VkPipelineExecutableInfoKHR executable{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    executable.pipeline = pipeline;
    executable.executableIndex = e;
    uint32_t count = 0;
    statistics(device, &executable, &count, nullptr);
    std::vector<VkPipelineExecutableStatisticKHR> values(count, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    statistics(device, &executable, &count, values.data());
    for (const VkPipelineExecutableStatisticKHR& v : values) {
      std::string value;
      switch (v.format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: value = v.value.b32 ? "true" : "false"; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: value = std::to_string(v.value.i64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: value = std::to_string(v.value.u64); break;
        default: value = std::to_string(v.value.f64); break;
      }
      text += (text.empty() ? "" : ", ") + std::string(v.name) + "=" + value;
    }
  }
  return text;
}

// "name [s0,s1,...]": a kernel kind as logs and statistics name it.
std::string kind_name(const std::string& name, std::span<const uint32_t> specialization) {
  std::string key = name + " [";
  for (size_t i = 0; i < specialization.size(); ++i) {
    if (i) key += ',';
    key += std::to_string(specialization[i]);
  }
  return key + "]";
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// KVSCOPE_PIPELINE_LOG=FILE (or "-", standard error): a line for every
// pipeline built, with the milliseconds of vkCreateComputePipelines and of a
// first dispatch. Mesa's lavapipe compiles a pipeline's machine code with LLVM
// only when it is first dispatched, so the second number is its compile; a
// dispatch of no workgroups reaches it without running anything.
void log_pipeline(const Device& device, const CompiledKernel& compiled, const std::string& kind,
                  KernelLayout layout, double create_ms) {
  const char* path = std::getenv("KVSCOPE_PIPELINE_LOG");
  if (!path || !*path) return;
  Buffer scratch(device, 16);
  std::vector<VkDescriptorBufferInfo> infos(layout.bindings, {scratch.handle(), 0, VK_WHOLE_SIZE});
  std::vector<VkWriteDescriptorSet> writes(layout.bindings);
  for (uint32_t i = 0; i < layout.bindings; ++i) {
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  const std::vector<std::byte> zeros(layout.push_bytes);
  const auto start = std::chrono::steady_clock::now();
  device.submit_and_wait([&](VkCommandBuffer cb) {
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, compiled.pipeline.get());
    if (layout.bindings)
      device.push_descriptor_set(cb, VK_PIPELINE_BIND_POINT_COMPUTE, compiled.pipeline_layout.get(), 0, layout.bindings,
                                 writes.data());
    if (layout.push_bytes)
      vkCmdPushConstants(cb, compiled.pipeline_layout.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0, layout.push_bytes,
                         zeros.data());
    vkCmdDispatch(cb, 0, 0, 0);
  });
  const double dispatch_ms = milliseconds_since(start);
  char numbers[96];
  std::snprintf(numbers, sizeof numbers, "\t%.1f\t%.1f\n", create_ms, dispatch_ms);
  const std::string line = device.info().name + "\t" + kind + numbers;
  // One write of the whole line, appended: processes that share the file (ctest -j) keep their lines whole.
  const int fd = std::string(path) == "-" ? STDERR_FILENO : open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) {  // a diagnostic: the run goes on, saying so once
    static std::once_flag said;
    std::call_once(said, [&] { std::fprintf(stderr, "kvscope: KVSCOPE_PIPELINE_LOG: cannot write %s\n", path); });
    return;
  }
  [[maybe_unused]] const ssize_t written = write(fd, line.data(), line.size());
  if (fd != STDERR_FILENO) close(fd);
}

}  // namespace

namespace {

std::shared_ptr<const CompiledKernel> compile(const Device& device, const std::string& name, std::span<const uint32_t> spirv,
                                              KernelLayout layout, std::span<const uint32_t> specialization) {
  VkDevice vk_device = device.handle();
  auto compiled = std::make_shared<CompiledKernel>();

  std::vector<VkDescriptorSetLayoutBinding> bindings(layout.bindings);
  for (uint32_t i = 0; i < layout.bindings; ++i)
    bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set_info.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  set_info.bindingCount = layout.bindings;
  set_info.pBindings = bindings.data();
  VkDescriptorSetLayout raw_set_layout = VK_NULL_HANDLE;
  KV_VK_CHECK(vkCreateDescriptorSetLayout(vk_device, &set_info, nullptr, &raw_set_layout));
  compiled->set_layout = UniqueDescriptorSetLayout(vk_device, raw_set_layout);

  VkPushConstantRange push_range{VK_SHADER_STAGE_COMPUTE_BIT, 0, layout.push_bytes};
  VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &raw_set_layout;
  layout_info.pushConstantRangeCount = layout.push_bytes ? 1 : 0;
  layout_info.pPushConstantRanges = &push_range;
  VkPipelineLayout raw_pipeline_layout = VK_NULL_HANDLE;
  KV_VK_CHECK(vkCreatePipelineLayout(vk_device, &layout_info, nullptr, &raw_pipeline_layout));
  compiled->pipeline_layout = UniquePipelineLayout(vk_device, raw_pipeline_layout);

  VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module_info.codeSize = spirv.size_bytes();
  module_info.pCode = spirv.data();
  VkShaderModule raw_module = VK_NULL_HANDLE;
  KV_VK_CHECK(vkCreateShaderModule(vk_device, &module_info, nullptr, &raw_module));
  UniqueShaderModule module(vk_device, raw_module);

  std::vector<VkSpecializationMapEntry> entries(specialization.size());
  for (uint32_t i = 0; i < specialization.size(); ++i)
    entries[i] = {i, i * uint32_t(sizeof(uint32_t)), sizeof(uint32_t)};
  VkSpecializationInfo specialization_info{};
  specialization_info.mapEntryCount = static_cast<uint32_t>(entries.size());
  specialization_info.pMapEntries = entries.data();
  specialization_info.dataSize = specialization.size_bytes();
  specialization_info.pData = specialization.data();

  VkComputePipelineCreateInfo pipeline_info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pipeline_info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipeline_info.stage.module = raw_module;
  pipeline_info.stage.pName = "main";
  pipeline_info.stage.pSpecializationInfo = &specialization_info;
  pipeline_info.layout = raw_pipeline_layout;
  if (device.kernel_statistics_enabled()) pipeline_info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkPipeline raw_pipeline = VK_NULL_HANDLE;
  const auto start = std::chrono::steady_clock::now();
  VkResult result = vkCreateComputePipelines(vk_device, VK_NULL_HANDLE, 1, &pipeline_info, nullptr, &raw_pipeline);
  if (result != VK_SUCCESS) fail("vkCreateComputePipelines(" + name + ")", result);
  const double create_ms = milliseconds_since(start);
  compiled->pipeline = UniquePipeline(vk_device, raw_pipeline);
  if (device.kernel_statistics_enabled())
    device.add_kernel_statistics(kind_name(name, specialization), compiler_statistics(vk_device, raw_pipeline));
  log_pipeline(device, *compiled, kind_name(name, specialization), layout, create_ms);
  return compiled;
}

}  // namespace

Kernel::Kernel(const Device& device, std::string name, std::span<const uint32_t> spirv,
               KernelLayout layout, std::span<const uint32_t> specialization)
    : name_(std::move(name)), layout_(layout) {
  // The kind: everything the pipeline is built from, the SPIR-V itself
  // included (a test may build two modules at one address in turn).
  std::string key = name_;
  key.append(1, '\0').append(reinterpret_cast<const char*>(spirv.data()), spirv.size_bytes());
  for (uint32_t value : {layout.bindings, layout.push_bytes}) key.append(reinterpret_cast<const char*>(&value), 4);
  key.append(reinterpret_cast<const char*>(specialization.data()), specialization.size_bytes());
  compiled_ = device.compiled_kernel(key, [&] { return compile(device, name_, spirv, layout, specialization); });
}

}  // namespace kv::vk
