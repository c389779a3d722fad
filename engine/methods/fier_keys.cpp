#include "methods/fier_keys.h"

#include "../shaders/layouts.h"
#include "fier_quantize_keys.spv.h"
#include "kernels/layer_kernel.h"

namespace kv {

namespace {
const AttentionShape& checked(const AttentionShape& shape, uint32_t group_size) {
  if (shape.dim % 32 != 0) throw InputError("fier packs 32 channels a word: d=" + std::to_string(shape.dim) + " is not a multiple of 32");
  if (group_size == 0) throw InputError("fier's key groups must hold at least one token", "group-size");
  return shape;
}
}  // namespace

FierKeys::FierKeys(const vk::Device& device, const GpuLayer& layer, uint32_t group_size)
    : layer_(&layer),
      group_size_(group_size),
      blocks_(ceil_div(layer.shape.tokens, group_size)),
      kernel_(make_layer_kernel<layouts::FierQuantizePush>(device, "fier_quantize_keys", fier_quantize_keys_spirv, 3,
                                                           checked(layer.shape, group_size), layer.dtype)),
      low_high_(device, size_t(layer.shape.kv_heads) * blocks_ * layer.shape.dim * sizeof(uint32_t)),
      bits_(device, size_t(layer.shape.kv_heads) * layer.shape.tokens * (layer.shape.dim / 32) * sizeof(uint32_t)) {}

void FierKeys::record_update(vk::Pass& pass, uint32_t first_token, uint32_t valid_tokens) const {
  const uint32_t first_block = first_token / group_size_, end_block = ceil_div(valid_tokens, group_size_);
  if (end_block <= first_block) return;
  layouts::FierQuantizePush push{layer_->shape.kv_heads, layer_->shape.tokens, valid_tokens, group_size_, blocks_, first_block, end_block};
  pass.dispatch(kernel_, {&layer_->keys, &low_high_, &bits_}, push, end_block - first_block, layer_->shape.kv_heads, 1,
                "quantize_keys");
}

}  // namespace kv
