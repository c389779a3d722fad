#include "kernels/fragment_layout.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cooperative_matrix_layout.spv.h"
#include "vk/buffer.h"
#include "vk/kernel.h"
#include "vk/pass.h"

namespace kv {

namespace {

bool probe_fragment_layout(const vk::Device& device) {
  constexpr uint32_t kLanes = 32, kSlots = 8, kWords = 2 * kLanes * kSlots + 2;
  vk::Kernel kernel(device, "cooperative_matrix_layout", cooperative_matrix_layout_spirv, {1, 0}, {});
  vk::Buffer positions(device, kWords * sizeof(uint32_t));
  positions.fill(0xffffffffu);
  vk::Pass pass(device, 1, vk::Pass::Timing::whole);
  pass.dispatch(kernel, {&positions}, static_cast<const void*>(nullptr), 1, 1, 1, "cooperative_matrix_layout");
  pass.run();
  const std::vector<uint32_t> found = positions.download_values<uint32_t>(kWords);
  if (found[2 * kLanes * kSlots] != kSlots || found[2 * kLanes * kSlots + 1] != kSlots) return false;
  for (uint32_t lane = 0; lane < kLanes; ++lane) {
    const uint32_t g = lane / 4, t = lane % 4;
    for (uint32_t slot = 0; slot < kSlots; ++slot) {
      const uint32_t row = g + (slot & 4 ? 8 : 0), column = 2 * t + (slot & 1) + (slot & 2 ? 8 : 0);
      for (uint32_t matrix = 0; matrix < 2; ++matrix)
        if (found[(matrix * kLanes + lane) * kSlots + slot] != 16 * row + column) return false;
    }
  }
  return true;
}

}  // namespace

bool has_mma_fragment_layout(const vk::Device& device) {
  if (!device.info().cooperative_matrix) return false;
  // The layout belongs to the GPU and its driver, so one probe serves every
  // Device a process opens on them (each Attention and Quoka asks).
  static std::mutex mutex;
  static std::map<std::string, bool> found_by_device;
  const std::string key = device.info().name + '\n' + device.info().driver;
  const std::lock_guard lock(mutex);
  const auto found = found_by_device.find(key);
  if (found != found_by_device.end()) return found->second;
  return found_by_device[key] = probe_fragment_layout(device);
}

}  // namespace kv
