#pragma once
#include "kernels/gpu_layer.h"
#include "vk/kernel.h"
#include "vk/pass.h"

namespace kv {

// Fier's 1-bit key cache on the GPU: per KV head and block of `group_size`
// tokens, fp16 (lo, hi) per channel, [G, n_blocks, d] packed pairs; per token,
// d bits, [G, T, d / 32] words.
class FierKeys {
 public:
  FierKeys(const vk::Device& device, const GpuLayer& layer, uint32_t group_size);
  // (Re)quantises the blocks holding tokens [first_token, valid_tokens).
  void record_update(vk::Pass& pass, uint32_t first_token, uint32_t valid_tokens) const;

  uint32_t group_size() const { return group_size_; }
  uint32_t blocks() const { return blocks_; }
  const vk::Buffer& low_high() const { return low_high_; }
  const vk::Buffer& bits() const { return bits_; }

 private:
  const GpuLayer* layer_;
  uint32_t group_size_;
  uint32_t blocks_;
  vk::Kernel kernel_;
  vk::Buffer low_high_;
  vk::Buffer bits_;
};

}  // namespace kv
