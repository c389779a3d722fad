#include "fragment_layout.h"

#include <cstdint>
#include <vector>

#include "cooperative_matrix_layout.spv.h"
#include "vk/buffer.h"
#include "vk/kernel.h"
#include "vk/pass.h"

namespace kv {

bool has_mma_fragment_layout(const vk::Device& device) {
  if (!device.info().cooperative_matrix) return false;
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

}  // namespace kv
