#include "topk.h"

#include "../shaders/layouts.h"
#include "methods/kernels.h"
#include "topk_count.spv.h"
#include "topk_digit.spv.h"
#include "topk_row.spv.h"
#include "topk_write.spv.h"

namespace kv {
namespace {
constexpr uint32_t kDigits = 3;  // 11 + 11 + 10 bits

constexpr uint32_t kWorkgroup = 256;  // topk_common.glsl's

vk::Kernel topk_kernel(const vk::Device& device, const char* name, std::span<const uint32_t> spirv, uint32_t buffers,
                       std::span<const uint32_t> specialization = {}) {
  return vk::Kernel(device, name, spirv, {buffers, sizeof(layouts::TopKPush)}, specialization);
}

// The candidates topk_row stages in shared memory (33 words per 32) beside its
// histogram, scan buffer and chosen bin: TOPK_ROW_MAX, or what the device's
// shared memory holds (lavapipe's 32 KiB: 5376).
uint32_t row_capacity(const vk::Device& device) {
  const uint32_t others = TOPK_BINS * 4 + kWorkgroup * 8 + 8;
  const uint32_t limit = device.limits().maxComputeSharedMemorySize;
  const uint32_t fits = limit > others ? (limit - others) / 4 * 32 / 33 / kWorkgroup * kWorkgroup : 0;
  return std::min<uint32_t>(TOPK_ROW_MAX, fits);
}
}  // namespace

TopK::TopK(const vk::Device& device)
    : device_(&device),
      row_capacity_(row_capacity(device)),
      row_(topk_kernel(device, "topk_row", topk_row_spirv, 2, std::span<const uint32_t>(&row_capacity_, 1))),
      digit_(topk_kernel(device, "topk_digit", topk_digit_spirv, 2)),
      count_(topk_kernel(device, "topk_count", topk_count_spirv, 3)),
      write_(topk_kernel(device, "topk_write", topk_write_spirv, 4)) {}

bool TopK::grow(vk::Buffer& buffer, VkDeviceSize bytes) {
  if (buffer.bytes() >= bytes) return false;
  if (buffer.bytes()) outgrown_.push_back(std::move(buffer));
  buffer = vk::Buffer(*device_, bytes);
  return true;
}

void TopK::record(vk::Pass& pass, const vk::Buffer& scores, uint32_t rows, uint32_t n, uint32_t row_stride, uint32_t k,
                  const vk::Buffer& indices, uint32_t out_stride, const std::string& stage) {
  if (n <= row_capacity_) {
    const layouts::TopKPush push{n, k, row_stride, out_stride, 1, 0};
    pass.dispatch(row_, {&scores, &indices}, push, 1, rows, 1, stage);
    return;
  }
  const uint32_t slices = ceil_div(n, TOPK_SLICE);
  if (grow(select_state_, VkDeviceSize(rows) * TOPK_ROW_WORDS * 4)) select_state_.fill(0);
  grow(slice_counts_, VkDeviceSize(rows) * slices * 8);
  layouts::TopKPush push{n, k, row_stride, out_stride, slices, 0};
  for (uint32_t level = 0; level < kDigits; ++level) {
    push.level = level;
    pass.dispatch(digit_, {&scores, &select_state_}, push, slices, rows, 1, stage);
  }
  pass.dispatch(count_, {&scores, &select_state_, &slice_counts_}, push, slices, rows, 1, stage);
  pass.dispatch(write_, {&scores, &select_state_, &slice_counts_, &indices}, push, slices, rows, 1, stage);
}

}  // namespace kv
