#include "kernels/topk.h"

#include <cmath>
#include <stdexcept>

#include "../shaders/layouts.h"
#include "kernels/layer_kernel.h"
#include "topk_long.spv.h"
#include "topk_row.spv.h"

namespace kv {
namespace {
constexpr uint32_t kRowWorkgroup = 512, kLongWorkgroup = 512;  // their TOPK_WORKGROUP

// topk_long gives a workgroup several slices where a slice each would make
// more workgroups than this: one wave of them on the H100 (132 SMs, one of
// its workgroups each at 72 registers). Every workgroup of a row draws the
// row's sample and finds its threshold, so fewer of them do less twice: on
// the H100, Fier's 32 rows of 32k / 128k took 37.4 / 55.4 us at 256, 27.2 /
// 41.3 at 128 and 30.9 / 58.1 at 64 (docs/perf-experiments.md); with the
// next slice loaded ahead, 36.3 / 51.6, 26.0 / 38.3 and 29.6 / 52.4.
constexpr uint32_t kLongWorkgroupsTarget = 128;

// The most entries a long row's gathered list may hold (8 bytes each, twice:
// as gathered and in index order). A row whose list would need more is read
// by one workgroup a pass per radix level, as before there was a list in
// global memory: Fier's top-k at 3% of 128k keys took 107 us a layer that way
// in the model on the H200 (docs/perf-experiments.md).
constexpr uint32_t kMaxListEntries = 1u << 16;

// A row's select state packs its gathered keys (at most its scores, which
// plan_long_row's slices bound by TOPK_MAX_SLICES * TOPK_SLICE) under
// TOPK_STATE_ARRIVAL, and one TOPK_STATE_ARRIVAL per workgroup (at most one a
// slice) above.
static_assert(uint64_t(TOPK_MAX_SLICES) * TOPK_SLICE < TOPK_STATE_ARRIVAL);
static_assert(uint64_t(TOPK_MAX_SLICES + 1) * TOPK_STATE_ARRIVAL <= uint64_t(1) << 32);

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

// The (key, index) entries topk_long stages in shared memory beside its
// slice places: about 4700 where a workgroup has 48 KiB, 2600 under lavapipe's 32.
uint32_t staged_capacity_for(const vk::Device& device) {
  const uint32_t others = common_shared_bytes(device, kLongWorkgroup) + TOPK_MAX_SLICES * 8;
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
      long_(topk_kernel(device, "topk_long", topk_long_spirv, 6, staged_capacity_, kLongWorkgroup)) {}

bool TopK::grow(vk::Buffer& buffer, VkDeviceSize bytes) {
  if (buffer.bytes() >= bytes) return false;
  if (buffer.bytes()) outgrown_.push_back(std::move(buffer));
  buffer = vk::Buffer(*device_, bytes);
  return true;
}

void TopK::record(vk::Pass& pass, const vk::Buffer& scores, uint32_t rows, uint32_t n, uint32_t row_stride, uint32_t k,
                  const vk::Buffer& indices, uint32_t out_stride, const std::string& stage) {
  record_rows(pass, scores, rows, {n, k, row_stride, out_stride, 0, 0, 0, 0, 0, 0}, indices, stage);
}

void TopK::record_pages(vk::Pass& pass, const vk::Buffer& scores, uint32_t rows, uint32_t n, uint32_t row_stride,
                        uint32_t k, uint32_t page_size, uint32_t n_tokens, const vk::Buffer& indices,
                        uint32_t out_stride, const std::string& stage) {
  if (page_size == 0) throw std::logic_error("TopK::record_pages: pages of no tokens");
  record_rows(pass, scores, rows, {n, k, row_stride, out_stride, 0, page_size, n_tokens, 0, 0, 0}, indices, stage);
}

void TopK::record_rows(vk::Pass& pass, const vk::Buffer& scores, uint32_t rows, layouts::TopKPush push,
                       const vk::Buffer& indices, const std::string& stage) {
  const uint32_t n = push.n;
  if (n <= row_capacity_) {
    pass.dispatch(row_, {&scores, &indices}, push, 1, rows, 1, stage);
    return;
  }
  const LongRowPlan plan = plan_long_row(n, std::min(push.k, n), push.row_stride, std::max(staged_capacity_, kMaxListEntries));
  push.slices = plan.slices;
  push.sample_rank = plan.sample_rank;
  push.sample_reach = plan.sample_reach;
  // Lists that fit shared memory keep the size they always had; longer ones
  // get what the plan expects, in steps of 1024.
  push.list_capacity = std::max(staged_capacity_, ceil_div(plan.list_entries, 1024) * 1024);
  if (grow(select_state_, VkDeviceSize(rows) * TOPK_STATE_WORDS * 4)) select_state_.fill(0);
  grow(gathered_, VkDeviceSize(rows) * push.list_capacity * 8);
  if (push.list_capacity > staged_capacity_) grow(ordered_, VkDeviceSize(rows) * push.list_capacity * 8);
  else grow(ordered_, 8);  // bound, never read
  grow(slice_table_, VkDeviceSize(rows) * std::max<uint32_t>(plan.slices, 1) * 8);
  // The kernel shares a row's slices evenly among its workgroups (workgroup_tiles).
  const uint32_t workgroups =
      plan.slices ? ceil_div(plan.slices, ceil_div(rows * plan.slices, kLongWorkgroupsTarget)) : 1;
  pass.dispatch(long_, {&scores, &indices, &select_state_, &gathered_, &slice_table_, &ordered_}, push, workgroups, rows,
                1, stage);
}

LongRowPlan plan_long_row(uint32_t n, uint32_t k, uint32_t row_stride, uint32_t capacity) {
  // Rows that start on a vec4 span n / 4 of them, rounded up; others at most
  // n / 4 + 2, whatever their start.
  const uint32_t vectors = row_stride % 4 == 0 ? ceil_div(n, 4) : n / 4 + 2;
  const uint32_t slices = ceil_div(vectors, TOPK_SLICE / 4);
  // The sample's keys among the row's k largest: about mu, give or take
  // sqrt(mu) for independent keys. A rank 4 deviations (and 4 keys) above it
  // is then reached by fewer than k of the row's keys about once in 30000
  // rows; the keys at or above the threshold number about reach * n /
  // TOPK_SAMPLE, give or take sqrt(reach) * n / TOPK_SAMPLE, and must fit the
  // capacity with 4 of those to spare. The sample takes its keys 4 adjacent,
  // so neighbours that move together widen both; a row where the sample
  // misses still comes out right, read a pass a level by its last workgroup.
  // The sample needs TOPK_SAMPLE / 4 whole vec4s of the row (layouts.h): a
  // row of n spans at least n / 4 - 2 besides its first and last.
  const double mu = double(k) * TOPK_SAMPLE / n;
  const uint32_t rank = uint32_t(std::ceil(mu + 4 * std::sqrt(mu) + 4));
  const uint32_t reach = rank + rank / 32;
  const double expected = (reach + 4 * std::sqrt(double(reach))) * n / TOPK_SAMPLE;
  if (n < TOPK_SAMPLE + 8 || slices > TOPK_MAX_SLICES || reach > TOPK_SAMPLE / 2 || expected > capacity)
    return {0, 0, 0, 0};
  return {slices, rank, reach, uint32_t(std::ceil(expected))};
}

}  // namespace kv
