#pragma once
#include "kernels/gpu_layer.h"
#include "vk/kernel.h"
#include "vk/pass.h"

namespace kv {

// Quest's per-page key metadata on the GPU: channel max and min of every page
// of `page_size` tokens, [G, d, n_pages] (max, min) pairs in the keys' storage
// type (exact: they are stored keys; channel-major so that scoring, one
// invocation per page, reads coalesced).
class QuestPages {
 public:
  QuestPages(const vk::Device& device, const GpuLayer& layer, uint32_t page_size);
  // (Re)computes the pages holding tokens [first_token, valid_tokens): the whole
  // cache at first, only the touched pages after tokens are appended.
  void record_update(vk::Pass& pass, uint32_t first_token, uint32_t valid_tokens) const;

  uint32_t page_size() const { return page_size_; }
  uint32_t pages() const { return pages_; }
  const vk::Buffer& minmax() const { return minmax_; }

 private:
  const GpuLayer* layer_;
  uint32_t page_size_;
  uint32_t max_groups_x_;
  uint32_t pages_;
  vk::Kernel kernel_;
  vk::Buffer minmax_;
};

}  // namespace kv
