#include "methods/quest_pages.h"

#include "../shaders/layouts.h"
#include "kernels/layer_kernel.h"
#include "quest_page_minmax.spv.h"

namespace kv {
namespace {

uint32_t checked_page_size(uint32_t page_size) {
  if (page_size == 0) throw InputError("quest's pages must hold at least one key", "page-size");
  return page_size;
}

}  // namespace

QuestPages::QuestPages(const vk::Device& device, const GpuLayer& layer, uint32_t page_size)
    : layer_(&layer),
      page_size_(checked_page_size(page_size)),
      max_groups_x_(device.limits().maxComputeWorkGroupCount[0]),
      pages_(ceil_div(layer.shape.tokens, page_size_)),
      kernel_(make_layer_kernel<layouts::PageMinMaxPush>(device, "quest_page_minmax", quest_page_minmax_spirv, 2,
                                                         layer.shape, layer.dtype)),
      minmax_(device, size_t(layer.shape.kv_heads) * pages_ * 2 * layer.shape.dim * dtype_size(layer.dtype)) {}

void QuestPages::record_update(vk::Pass& pass, uint32_t first_token, uint32_t valid_tokens) const {
  const uint32_t first_page = first_token / page_size_, end_page = ceil_div(valid_tokens, page_size_);
  if (end_page <= first_page) return;
  // One workgroup per page; a million tokens have more pages than one dispatch may hold.
  for (uint32_t from = first_page; from < end_page; from += max_groups_x_) {
    layouts::PageMinMaxPush push{layer_->shape.kv_heads, layer_->shape.tokens, valid_tokens, page_size_, pages_, from, end_page};
    pass.dispatch(kernel_, {&layer_->keys, &minmax_}, push, std::min(max_groups_x_, end_page - from),
                  layer_->shape.kv_heads, 1, "page_minmax");
  }
}

}  // namespace kv
