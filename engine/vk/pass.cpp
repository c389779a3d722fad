#include "vk/pass.h"

#include <algorithm>

#include "base/error.h"
#include "vk/check.h"

namespace kv::vk {

const char* part_name(Part part) {
  switch (part) {
    case Part::model: return "model";
    case Part::attention: return "attention";
    case Part::selection: return "selection";
  }
  return "?";
}

Pass::Pass(const Device& device, uint32_t max_dispatches, Timing timing)
    : device_(&device), max_dispatches_(max_dispatches), timing_(timing), timed_(device.timestamp_valid_bits() > 0) {
  command_buffer_ = device.allocate_command_buffer();
  fence_ = device.create_fence();
  if (timed_) {
    VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = timestamp_slots();
    VkQueryPool pool = VK_NULL_HANDLE;
    KV_VK_CHECK(vkCreateQueryPool(device.handle(), &info, nullptr, &pool));
    queries_ = UniqueQueryPool(device.handle(), pool);
  }
}

Pass::~Pass() {
  if (submitted_) {
    const VkFence fence = fence_.get();
    vkWaitForFences(device_->handle(), 1, &fence, VK_TRUE, UINT64_MAX);
  }
}

void Pass::begin_if_needed() {
  if (ended_) throw DeviceError("Pass: cannot record after the pass has run");
  if (recording_) return;
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  KV_VK_CHECK(vkBeginCommandBuffer(command_buffer_.get(), &begin));
  // What passes submitted before this one wrote (kernels and transfers) is
  // what this one reads: submission order alone does not make it visible.
  VkMemoryBarrier earlier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  earlier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  earlier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  vkCmdPipelineBarrier(command_buffer_.get(), VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &earlier, 0, nullptr, 0, nullptr);
  if (timed_) {
    vkCmdResetQueryPool(command_buffer_.get(), queries_.get(), 0, timestamp_slots());
    vkCmdWriteTimestamp(command_buffer_.get(), VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_.get(), 0);
  }
  recording_ = true;
}

void Pass::check_push_size(const Kernel& kernel, size_t bytes) const {
  if (bytes != kernel.layout().push_bytes)
    throw DeviceError("Pass: push constants of " + std::to_string(bytes) + " bytes for kernel " +
                      kernel.name() + " which takes " + std::to_string(kernel.layout().push_bytes));
}

void Pass::dispatch(const Kernel& kernel, std::initializer_list<const Buffer*> bindings,
                    const void* push, uint32_t groups_x, uint32_t groups_y, uint32_t groups_z,
                    const std::string& stage) {
  begin_if_needed();
  if (dispatch_stages_.size() >= max_dispatches_)
    throw DeviceError("Pass: more than " + std::to_string(max_dispatches_) + " dispatches");
  if (bindings.size() != kernel.layout().bindings)
    throw DeviceError("Pass: kernel " + kernel.name() + " takes " + std::to_string(kernel.layout().bindings) +
                      " buffers, got " + std::to_string(bindings.size()));
  const VkPhysicalDeviceLimits& limits = device_->limits();
  if (groups_x > limits.maxComputeWorkGroupCount[0] || groups_y > limits.maxComputeWorkGroupCount[1] ||
      groups_z > limits.maxComputeWorkGroupCount[2])
    throw DeviceError("Pass: kernel " + kernel.name() + " needs " + std::to_string(groups_x) + "x" +
                      std::to_string(groups_y) + "x" + std::to_string(groups_z) +
                      " workgroups, more than the device allows");

  std::vector<VkDescriptorBufferInfo> infos;
  infos.reserve(bindings.size());
  for (const Buffer* buffer : bindings) {
    if (buffer->bytes() > limits.maxStorageBufferRange)
      throw DeviceError("Pass: a buffer of " + std::to_string(buffer->bytes()) + " bytes for kernel " +
                        kernel.name() + " exceeds the device's maxStorageBufferRange of " +
                        std::to_string(limits.maxStorageBufferRange));
    infos.push_back({buffer->handle(), 0, VK_WHOLE_SIZE});
  }
  std::vector<VkWriteDescriptorSet> writes(infos.size());
  for (uint32_t i = 0; i < infos.size(); ++i) {
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }

  VkCommandBuffer cb = command_buffer_.get();
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, kernel.pipeline());
  device_->push_descriptor_set(cb, VK_PIPELINE_BIND_POINT_COMPUTE, kernel.pipeline_layout(), 0,
                               static_cast<uint32_t>(writes.size()), writes.data());
  if (kernel.layout().push_bytes)
    vkCmdPushConstants(cb, kernel.pipeline_layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, kernel.layout().push_bytes, push);
  if (groups_x && groups_y && groups_z) vkCmdDispatch(cb, groups_x, groups_y, groups_z);
  dispatch_stages_.push_back({stage, part_});
  barrier_and_timestamp();
}

void Pass::barrier_and_timestamp() {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT;
  vkCmdPipelineBarrier(command_buffer_.get(), VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier,
                       0, nullptr, 0, nullptr);
  if (timed_ && timing_ == Timing::per_stage)
    vkCmdWriteTimestamp(command_buffer_.get(), VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_.get(),
                        static_cast<uint32_t>(dispatch_stages_.size()));
}

void Pass::run() {
  submit();
  wait();
}

void Pass::submit() {
  if (submitted_) throw DeviceError("Pass: submitted twice without a wait");
  if (!ended_) {
    begin_if_needed();
    if (timed_ && timing_ == Timing::whole)
      vkCmdWriteTimestamp(command_buffer_.get(), VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_.get(), 1);
    // Kernels may write host-visible buffers that the host reads once the pass is done.
    VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    to_host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(command_buffer_.get(), VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                         &to_host, 0, nullptr, 0, nullptr);
    KV_VK_CHECK(vkEndCommandBuffer(command_buffer_.get()));
    ended_ = true;
  }
  device_->submit(command_buffer_.get(), fence_.get());
  submitted_ = true;
}

void Pass::wait() {
  if (!submitted_) throw DeviceError("Pass: wait without a submit");
  device_->wait_and_reset(fence_.get());
  submitted_ = false;
  timestamps_.clear();
  if (!timed_) return;
  timestamps_.resize(timing_ == Timing::per_stage ? dispatch_stages_.size() + 1 : 2);
  KV_VK_CHECK(vkGetQueryPoolResults(device_->handle(), queries_.get(), 0, static_cast<uint32_t>(timestamps_.size()),
                                    timestamps_.size() * sizeof(uint64_t), timestamps_.data(), sizeof(uint64_t),
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
}

void Pass::clear() {
  if (submitted_) wait();
  if (recording_ && !ended_) KV_VK_CHECK(vkEndCommandBuffer(command_buffer_.get()));
  dispatch_stages_.clear();
  timestamps_.clear();
  part_ = Part::model;
  recording_ = ended_ = false;
}

uint32_t Pass::timestamp_slots() const { return timing_ == Timing::per_stage ? max_dispatches_ + 1 : 2; }

double Pass::ticks_to_milliseconds(uint64_t from, uint64_t to) const {
  const uint32_t bits = device_->timestamp_valid_bits();
  const uint64_t mask = bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  return double((to - from) & mask) * device_->timestamp_period_ns() * 1e-6;
}

std::vector<StageTime> Pass::stage_times() const {
  std::vector<StageTime> times;
  if (timestamps_.empty() || timing_ == Timing::whole) return times;
  for (size_t i = 0; i < dispatch_stages_.size(); ++i) {
    const double ms = ticks_to_milliseconds(timestamps_[i], timestamps_[i + 1]);
    const DispatchStage& d = dispatch_stages_[i];
    auto it = std::find_if(times.begin(), times.end(), [&](const StageTime& t) { return t.stage == d.stage && t.part == d.part; });
    if (it == times.end())
      times.push_back({d.stage, d.part, ms});
    else
      it->milliseconds += ms;
  }
  return times;
}

double Pass::total_milliseconds() const {
  return timestamps_.empty() ? 0 : ticks_to_milliseconds(timestamps_.front(), timestamps_.back());
}

}  // namespace kv::vk
