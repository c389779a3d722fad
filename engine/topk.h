#pragma once
#include <string>
#include <vector>

#include "vk/buffer.h"
#include "vk/kernel.h"
#include "vk/pass.h"

namespace kv {

// Owner of the top-k kernels and their scratch: per row, the k largest of n
// scores as ascending indices, ties toward the lower index, -1 padded to
// out_stride; every index when n <= k. A row of at most 8192 candidates (fewer
// where shared memory is under 43 KiB) is one workgroup's (topk_row, one
// dispatch); a longer row is spread over slices of 2048 candidates, a workgroup
// each (topk_digit x 3, topk_count, topk_write).
// One TopK may be recorded many times, in one pass or several, as long as
// their runs do not overlap (passes run one at a time).
class TopK {
 public:
  explicit TopK(const vk::Device& device);
  void record(vk::Pass& pass, const vk::Buffer& scores, uint32_t rows, uint32_t n, uint32_t row_stride, uint32_t k,
              const vk::Buffer& indices, uint32_t out_stride, const std::string& stage = "topk");

 private:
  // Replaces `buffer` with one of `bytes` when it is smaller; true if it did.
  bool grow(vk::Buffer& buffer, VkDeviceSize bytes);

  const vk::Device* device_;
  uint32_t row_capacity_;  // the longest row topk_row takes
  vk::Kernel row_, digit_, count_, write_;
  // Zeroed when allocated; topk_digit leaves the histograms and counters zeroed
  // after every use, so no clearing pass is recorded.
  vk::Buffer select_state_;
  vk::Buffer slice_counts_;
  std::vector<vk::Buffer> outgrown_;  // kept: passes recorded before a growth still bind them
};

}  // namespace kv
