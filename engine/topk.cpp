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

vk::Kernel topk_kernel(const vk::Device& device, const char* name, std::span<const uint32_t> spirv, uint32_t buffers) {
  return vk::Kernel(device, name, spirv, {buffers, sizeof(layouts::TopKPush)}, {});
}
}  // namespace

TopK::TopK(const vk::Device& device)
    : device_(&device),
      row_(topk_kernel(device, "topk_row", topk_row_spirv, 2)),
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
  if (n <= TOPK_ROW_MAX) {
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
