#include "model/kernels.h"

#include <algorithm>
#include <vector>

#include "element_type.h"
#include "layer_kernel.h"
#include "model_argmax.spv.h"
#include "model_embed.spv.h"
#include "model_matmul.spv.h"
#include "model_matmul_matrix.spv.h"
#include "model_matmul_matrix_khr.spv.h"
#include "model_matvec.spv.h"
#include "model_random_fill.spv.h"
#include "model_rmsnorm.spv.h"
#include "model_rope.spv.h"
#include "model_swiglu.spv.h"

namespace kv::model {
namespace {

// model_matmul's tile (rows x tokens a workgroup), model_matvec's rows a
// workgroup, model_matmul_matrix's tile.
constexpr uint32_t kTileRows = 32, kTileTokens = 8, kMatvecRows = 8;
constexpr uint32_t kMatrixRows = 64, kMatrixTokens = 32;

vk::Buffer zero_float(const vk::Device& device) {
  vk::Buffer buffer(device, sizeof(float));
  buffer.fill(0);
  return buffer;
}

}  // namespace

ModelKernels::ModelKernels(const vk::Device& device, DType storage, bool matrix_linear_layers)
    : embed_(device, "model_embed", model_embed_spirv, {3, sizeof(layouts::ModelEmbedPush)},
             std::vector<uint32_t>{element_type(storage)}),
      rmsnorm_(device, "model_rmsnorm", model_rmsnorm_spirv, {3, sizeof(layouts::ModelRmsNormPush)}, {}),
      matvec_(device, "model_matvec", model_matvec_spirv, {4, sizeof(layouts::ModelMatmulPush)},
              std::vector<uint32_t>{element_type(storage)}),
      matmul_(device, "model_matmul", model_matmul_spirv, {4, sizeof(layouts::ModelMatmulPush)},
              std::vector<uint32_t>{element_type(storage), kTileRows, kTileTokens, kTileRows * kTileTokens}),
      rope_(device, "model_rope", model_rope_spirv, {8, sizeof(layouts::ModelRopePush)},
            std::vector<uint32_t>{element_type(storage)}),
      swiglu_(device, "model_swiglu", model_swiglu_spirv, {2, sizeof(layouts::ModelSwigluPush)}, {}),
      argmax_(device, "model_argmax", model_argmax_spirv, {2, sizeof(layouts::ModelArgmaxPush)}, {}),
      random_fill_(device, "model_random_fill", model_random_fill_spirv, {1, sizeof(layouts::ModelRandomFillPush)},
                   std::vector<uint32_t>{element_type(storage)}),
      no_bias_(zero_float(device)) {
  if (matrix_linear_layers)
    matmul_matrix_.emplace(device, "model_matmul_matrix",
                           vk::cooperative_matrix_spirv(device, model_matmul_matrix_spirv, model_matmul_matrix_khr_spirv),
                           vk::KernelLayout{4, sizeof(layouts::ModelMatmulPush)}, std::vector<uint32_t>{});
}

void ModelKernels::embed(vk::Pass& pass, const vk::Buffer& table, const vk::Buffer& tokens, vk::Buffer& x,
                         uint32_t n_tokens, uint32_t hidden) const {
  pass.dispatch(embed_, {&table, &tokens, &x}, layouts::ModelEmbedPush{n_tokens, hidden}, ceil_div(n_tokens * hidden, 256), 1,
                1, "embed");
}

void ModelKernels::rmsnorm(vk::Pass& pass, const vk::Buffer& x, const vk::Buffer& weight, vk::Buffer& y,
                           uint32_t n_tokens, uint32_t first_token, uint32_t hidden, float eps) const {
  pass.dispatch(rmsnorm_, {&x, &weight, &y}, layouts::ModelRmsNormPush{n_tokens, first_token, hidden, eps}, n_tokens, 1, 1,
                "rmsnorm");
}

void ModelKernels::linear(vk::Pass& pass, const vk::Buffer& weights, const vk::Buffer& x, vk::Buffer& y,
                          const vk::Buffer* bias, const layouts::ModelMatmulPush& shape, const std::string& stage) const {
  layouts::ModelMatmulPush push = shape;
  push.has_bias = bias ? 1u : 0u;
  const vk::Buffer* b = bias ? bias : &no_bias_;
  if (push.n_tokens > 1 && matmul_matrix_)
    pass.dispatch(*matmul_matrix_, {&weights, &x, &y, b}, push, ceil_div(push.n_out, kMatrixRows),
                  ceil_div(push.n_tokens, kMatrixTokens), 1, stage);
  else if (push.n_tokens == 1)
    pass.dispatch(matvec_, {&weights, &x, &y, b}, push, ceil_div(push.n_out, kMatvecRows), 1, 1, stage);
  else
    pass.dispatch(matmul_, {&weights, &x, &y, b}, push, ceil_div(push.n_out, kTileRows), ceil_div(push.n_tokens, kTileTokens),
                  1, stage);
}

void ModelKernels::rope(vk::Pass& pass, const RopeBuffers& b, const layouts::ModelRopePush& push) const {
  pass.dispatch(rope_, {b.q, b.k, b.v, b.rotations, b.queries, b.key_cache, b.value_cache, b.kept_queries}, push,
                ceil_div(push.n_tokens * (push.n_heads + 2 * push.n_kv_heads) * push.head_dim / 2, 256), 1, 1, "rope");
}

void ModelKernels::swiglu(vk::Pass& pass, vk::Buffer& gate, const vk::Buffer& up, uint32_t count) const {
  pass.dispatch(swiglu_, {&gate, &up}, layouts::ModelSwigluPush{count}, ceil_div(count, 256), 1, 1, "swiglu");
}

void ModelKernels::random_fill(vk::Pass& pass, vk::Buffer& weights, uint32_t key) const {
  const uint32_t words = uint32_t(weights.bytes() / 4);
  // A grid-stride loop: at most 4096 workgroups, whatever the tensor's size.
  pass.dispatch(random_fill_, {&weights}, layouts::ModelRandomFillPush{words, key}, std::min(ceil_div(words, 256), 4096u), 1, 1,
                "random_fill");
}

void ModelKernels::argmax(vk::Pass& pass, const vk::Buffer& logits, vk::Buffer& chosen, uint32_t n) const {
  pass.dispatch(argmax_, {&logits, &chosen}, layouts::ModelArgmaxPush{n}, 1, 1, 1, "argmax");
}

}  // namespace kv::model
