#pragma once
#include <string>
#include <vector>

#include "../shaders/layouts.h"
#include "vk/buffer.h"
#include "vk/kernel.h"
#include "vk/pass.h"

namespace kv {

// How topk_long takes rows of n scores, row_stride apart: `slices` of
// TOPK_SLICE (0: one workgroup reads a row, a pass per radix level), the
// sample rank and reach its threshold is found between (layouts.h), and the
// entries a row's gathered list needs. Slices only where the keys at or above
// the threshold very likely fit `capacity` entries.
struct LongRowPlan {
  uint32_t slices, sample_rank, sample_reach, list_entries;
};
LongRowPlan plan_long_row(uint32_t n, uint32_t k, uint32_t row_stride, uint32_t capacity);

// Owner of the top-k kernels and their scratch: per row, the k largest of n
// scores as ascending indices, ties toward the lower index, -1 padded to
// out_stride; every index when n <= k. A row of at most 8192 candidates (fewer
// where shared memory is under about 42 KiB) is staged in shared memory by one
// workgroup (topk_row). A longer one is topk_long's, one dispatch: its
// workgroups gather the keys at or above a threshold drawn from a sample of
// the row, and the row's last workgroup selects among them (plan_long_row),
// in shared memory or, for a k of several thousand, from a list in global
// memory sized to the k (grown as needed).
// One TopK may be recorded many times, in one pass or several, as long as
// their runs do not overlap (passes run one at a time).
class TopK {
 public:
  explicit TopK(const vk::Device& device);
  void record(vk::Pass& pass, const vk::Buffer& scores, uint32_t rows, uint32_t n, uint32_t row_stride, uint32_t k,
              const vk::Buffer& indices, uint32_t out_stride, const std::string& stage = "topk");
  // Quest's selection as tokens: per row, the k best of n page scores, written
  // as those pages' page_size tokens, then the tokens of the page holding the
  // last of n_tokens (the n pages are the ones before it), -1 padded to
  // out_stride; every token when n_tokens <= out_stride. The same kernels as
  // record(); only their writes differ.
  void record_pages(vk::Pass& pass, const vk::Buffer& scores, uint32_t rows, uint32_t n, uint32_t row_stride, uint32_t k,
                    uint32_t page_size, uint32_t n_tokens, const vk::Buffer& indices, uint32_t out_stride,
                    const std::string& stage = "topk");
  uint32_t row_capacity() const { return row_capacity_; }
  // The most keys topk_long selects among in shared memory.
  uint32_t staged_capacity() const { return staged_capacity_; }

 private:
  void record_rows(vk::Pass& pass, const vk::Buffer& scores, uint32_t rows, layouts::TopKPush push,
                   const vk::Buffer& indices, const std::string& stage);
  // Replaces `buffer` with one of `bytes` when it is smaller; true if it did.
  bool grow(vk::Buffer& buffer, VkDeviceSize bytes);

  const vk::Device* device_;
  uint32_t row_capacity_;  // the longest row topk_row takes
  uint32_t staged_capacity_;
  vk::Kernel row_, long_;
  // Zeroed when allocated; topk_long leaves it zeroed after every use, so no
  // clearing pass is recorded.
  vk::Buffer select_state_;
  vk::Buffer gathered_, slice_table_, ordered_;
  std::vector<vk::Buffer> outgrown_;  // kept: passes recorded before a growth still bind them
};

}  // namespace kv
