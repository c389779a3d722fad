#include "topk.h"

#include "../shaders/layouts.h"
#include "topk.spv.h"

namespace kv {
namespace {
constexpr uint32_t kWorkgroup = 1024;  // the most invocations Vulkan guarantees: more loads in flight per row
}

TopK::TopK(const vk::Device& device)
    : kernel_([&] {
        const uint32_t specialization[] = {kWorkgroup};
        return vk::Kernel(device, "topk", topk_spirv, {2, sizeof(layouts::TopKPush)}, specialization);
      }()) {}

void TopK::record(vk::Pass& pass, const vk::Buffer& scores, uint32_t rows, uint32_t n, uint32_t row_stride, uint32_t k,
                  const vk::Buffer& indices, uint32_t out_stride, const std::string& stage) const {
  layouts::TopKPush push{n, k, row_stride, out_stride};
  pass.dispatch(kernel_, {&scores, &indices}, push, rows, 1, 1, stage);
}

}  // namespace kv
