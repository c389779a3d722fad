#include "topk.h"

#include <stdexcept>

#include "../shaders/layouts.h"
#include "methods/kernels.h"
#include "topk_finish.spv.h"
#include "topk_gather.spv.h"
#include "topk_histogram.spv.h"
#include "topk_row.spv.h"

namespace kv {
namespace {
constexpr uint32_t kRowWorkgroup = 512, kSliceWorkgroup = 256, kFinishWorkgroup = 1024;  // their TOPK_WORKGROUP

// Rows of up to this many scores are topk_finish's alone: on the H100 one
// workgroup reading such a row a pass per level beat the three dispatches
// (Fier decode's top-k at 32k: 30.9 against 37.2 us; even at 64k, 43.5
// against 44.7 for Fier and 44.3 against 36.4 for QuoKA; docs/perf.md).
constexpr uint32_t kFinishAloneMax = 32768;

// topk_histogram and topk_gather take several slices a workgroup where a
// slice each would make more workgroups than this, so that each workgroup
// finds the window (or the chosen bin) once for all its slices and a dispatch
// fits about one wave. H100, Fier's and SparQ's 32 rows at 128k: 1024
// workgroups -> 512, top-k 53.1 -> 49.4-50.0 and 55.4 -> 51.3 us; a target of 264
// made rows of 64k slower (42.7 -> 46.5; docs/perf.md, session 20).
constexpr uint32_t kSliceWorkgroupsTarget = 512;

// Shared memory topk_common.glsl declares beside a kernel's own arrays: the
// scan's per-subgroup sums and total, the chosen bin, the histogram, the
// per-subgroup extremes and (for kernels that select among staged candidates)
// the kept pages.
uint32_t common_shared_bytes(const vk::Device& device, uint32_t workgroup) {
  const uint32_t subgroups = workgroup / device.info().subgroup_size;
  return subgroups * 8 + 8 + 12 + TOPK_BINS * 4 + subgroups * 8 + TOPK_KEPT_PAGES * 4;
}

// The candidates topk_row stages in shared memory (33 words per 32):
// TOPK_ROW_MAX, or what the device's shared memory holds (lavapipe's 32 KiB:
// 5120).
uint32_t row_capacity_for(const vk::Device& device) {
  const uint32_t others = common_shared_bytes(device, kRowWorkgroup);
  const uint32_t limit = device.limits().maxComputeSharedMemorySize;
  const uint32_t fits = limit > others ? (limit - others) / 4 * 32 / 33 / kRowWorkgroup * kRowWorkgroup : 0;
  return std::min<uint32_t>(TOPK_ROW_MAX, fits);
}

// The (key, index) entries topk_finish stages in shared memory beside its
// slice places: about 4700 where a workgroup has 48 KiB, 2400 under lavapipe's 32.
uint32_t staged_capacity_for(const vk::Device& device) {
  const uint32_t others = common_shared_bytes(device, kFinishWorkgroup) + TOPK_MAX_SLICES * 8;
  const uint32_t limit = device.limits().maxComputeSharedMemorySize;
  return limit > others ? (limit - others) / 8 : 0;
}

vk::Kernel topk_kernel(const vk::Device& device, const char* name, std::span<const uint32_t> spirv, uint32_t buffers,
                       uint32_t capacity, uint32_t workgroup) {
  const uint32_t specialization[] = {capacity, workgroup / device.info().subgroup_size};
  return vk::Kernel(device, name, spirv, {buffers, sizeof(layouts::TopKPush)}, specialization);
}
}  // namespace

TopK::TopK(const vk::Device& device)
    : device_(&device),
      row_capacity_(row_capacity_for(device)),
      staged_capacity_(staged_capacity_for(device)),
      row_(topk_kernel(device, "topk_row", topk_row_spirv, 2, row_capacity_, kRowWorkgroup)),
      histogram_(topk_kernel(device, "topk_histogram", topk_histogram_spirv, 2, 0, kSliceWorkgroup)),
      gather_(topk_kernel(device, "topk_gather", topk_gather_spirv, 4, staged_capacity_, kSliceWorkgroup)),
      finish_(topk_kernel(device, "topk_finish", topk_finish_spirv, 5, staged_capacity_, kFinishWorkgroup)) {}

bool TopK::grow(vk::Buffer& buffer, VkDeviceSize bytes) {
  if (buffer.bytes() >= bytes) return false;
  if (buffer.bytes()) outgrown_.push_back(std::move(buffer));
  buffer = vk::Buffer(*device_, bytes);
  return true;
}

void TopK::record(vk::Pass& pass, const vk::Buffer& scores, uint32_t rows, uint32_t n, uint32_t row_stride, uint32_t k,
                  const vk::Buffer& indices, uint32_t out_stride, const std::string& stage) {
  record_rows(pass, scores, rows, {n, k, row_stride, out_stride, 0, 0, 0}, indices, stage);
}

void TopK::record_pages(vk::Pass& pass, const vk::Buffer& scores, uint32_t rows, uint32_t n, uint32_t row_stride,
                        uint32_t k, uint32_t page_size, uint32_t n_tokens, const vk::Buffer& indices,
                        uint32_t out_stride, const std::string& stage) {
  if (page_size == 0) throw std::logic_error("TopK::record_pages: pages of no tokens");
  record_rows(pass, scores, rows, {n, k, row_stride, out_stride, 0, page_size, n_tokens}, indices, stage);
}

void TopK::record_rows(vk::Pass& pass, const vk::Buffer& scores, uint32_t rows, layouts::TopKPush push,
                       const vk::Buffer& indices, const std::string& stage) {
  const uint32_t n = push.n;
  if (n <= row_capacity_) {
    pass.dispatch(row_, {&scores, &indices}, push, 1, rows, 1, stage);
    return;
  }
  // A row spans at most n / 4 + 2 aligned vec4s, whatever its start.
  const uint32_t slices = ceil_div(n / 4 + 2, TOPK_SLICE / 4);
  const bool sliced = n > kFinishAloneMax && slices <= TOPK_MAX_SLICES;
  push.slices = sliced ? slices : 0;
  if (grow(select_state_, VkDeviceSize(rows) * TOPK_STATE_WORDS * 4)) select_state_.fill(0);
  grow(gathered_, VkDeviceSize(rows) * staged_capacity_ * 8);
  grow(slice_table_, VkDeviceSize(rows) * std::max<uint32_t>(push.slices, 1) * 8);
  if (push.slices) {
    // The kernels share a row's slices evenly among its workgroups (workgroup_tiles).
    const uint32_t workgroups = ceil_div(slices, ceil_div(rows * slices, kSliceWorkgroupsTarget));
    pass.dispatch(histogram_, {&scores, &select_state_}, push, workgroups, rows, 1, stage);
    pass.dispatch(gather_, {&scores, &select_state_, &gathered_, &slice_table_}, push, workgroups, rows, 1, stage);
  }
  pass.dispatch(finish_, {&scores, &indices, &select_state_, &gathered_, &slice_table_}, push, 1, rows, 1, stage);
}

}  // namespace kv
