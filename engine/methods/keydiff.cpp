// KeyDiff (docs/methods.md): per KV head, the candidate keys least similar to
// the mean of the unit-normalised candidate keys; no query involved.
#include "../shaders/layouts.h"
#include "kernels/layer_kernel.h"
#include "kernels/topk.h"
#include "keydiff_anchor.spv.h"
#include "keydiff_key_sums.spv.h"
#include "keydiff_scores.spv.h"
#include "methods/table.h"

namespace kv {
namespace {

class KeyDiff final : public Method {
 public:
  KeyDiff(const vk::Device& device, const GpuLayer& layer)
      : layer_(layer),
        sums_kernel_(make_layer_kernel<layouts::KeyDiffPush>(device, "keydiff_key_sums", keydiff_key_sums_spirv, 2,
                                                             layer.shape, layer.dtype)),
        anchor_kernel_(make_layer_kernel<layouts::KeyDiffPush>(device, "keydiff_anchor", keydiff_anchor_spirv, 2,
                                                               layer.shape, layer.dtype)),
        scores_kernel_(make_layer_kernel<layouts::KeyDiffPush>(device, "keydiff_scores", keydiff_scores_spirv, 3,
                                                               layer.shape, layer.dtype)),
        topk_(device),
        sums_(device, size_t(layer.shape.kv_heads) * ceil_div(layer.shape.tokens, KEYDIFF_SPLIT) * layer.shape.dim * 4),
        anchor_(device, size_t(layer.shape.kv_heads) * layer.shape.dim * 4),
        scores_(device, size_t(layer.shape.kv_heads) * layer.shape.tokens * 4) {}

  std::string name() const override { return "keydiff"; }
  Granularity granularity() const override { return Granularity::kv_head; }
  ScoreView scores() const override { return {&scores_, layer_.shape.kv_heads, layer_.shape.tokens, 1}; }
  nlohmann::json params() const override { return nlohmann::json::object(); }

  void record(vk::Pass& pass, const Block& block, const BlockInputs&, uint32_t budget,
              const vk::Buffer& indices) override {
    const AttentionShape& s = layer_.shape;
    const uint32_t candidates = block.candidates(), splits = ceil_div(candidates, KEYDIFF_SPLIT);
    const layouts::KeyDiffPush push{s.kv_heads, s.tokens, candidates, splits, s.tokens};
    pass.dispatch(sums_kernel_, {&layer_.keys, &sums_}, push, splits, s.kv_heads, 1, "key_sums");
    pass.dispatch(anchor_kernel_, {&sums_, &anchor_}, push, s.kv_heads, 1, 1, "anchor");
    pass.dispatch(scores_kernel_, {&layer_.keys, &anchor_, &scores_}, push, splits, s.kv_heads, 1,
                  "key_scores");
    topk_.record(pass, scores_, s.kv_heads, candidates, s.tokens, budget, indices, budget);
  }

 private:
  const GpuLayer& layer_;
  vk::Kernel sums_kernel_, anchor_kernel_, scores_kernel_;
  TopK topk_;
  vk::Buffer sums_, anchor_, scores_;
};

}  // namespace

std::unique_ptr<Method> make_keydiff(const vk::Device& device, const GpuLayer& layer, const MethodOptions&, Mode,
                                     uint32_t) {
  return std::make_unique<KeyDiff>(device, layer);
}

}  // namespace kv
