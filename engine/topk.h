#pragma once
#include <string>

#include "vk/kernel.h"
#include "vk/pass.h"

namespace kv {

// Owner of topk.comp: per row, the k largest of n scores as ascending indices,
// ties toward the lower index, -1 padded to out_stride; every index when n <= k.
class TopK {
 public:
  explicit TopK(const vk::Device& device);
  void record(vk::Pass& pass, const vk::Buffer& scores, uint32_t rows, uint32_t n, uint32_t row_stride, uint32_t k,
              const vk::Buffer& indices, uint32_t out_stride, const std::string& stage = "topk") const;

 private:
  vk::Kernel kernel_;
};

}  // namespace kv
