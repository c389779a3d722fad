// TOVA (docs/methods.md): the layer's mean attention of the block's last
// query, top-k, one set shared by all heads.
#include "../shaders/layouts.h"
#include "kernels/layer_kernel.h"
#include "kernels/topk.h"
#include "methods/table.h"
#include "tova_scores.spv.h"

namespace kv {
namespace {

class Tova final : public Method {
 public:
  Tova(const vk::Device& device, const GpuLayer& layer)
      : layer_(layer),
        scores_kernel_(make_layer_kernel<layouts::OracleScoresPush>(device, "tova_scores", tova_scores_spirv, 4, layer.shape,
                                                            layer.dtype)),
        topk_(device),
        scores_(device, size_t(layer.shape.kv_heads) * layer.shape.tokens * 4) {}

  std::string name() const override { return "tova"; }
  Granularity granularity() const override { return Granularity::kv_head; }
  ScoreView scores() const override { return {&scores_, layer_.shape.kv_heads, layer_.shape.tokens, 1}; }
  nlohmann::json params() const override { return nlohmann::json::object(); }
  bool needs_dense_lse() const override { return true; }

  void record(vk::Pass& pass, const Block& block, const BlockInputs& inputs, uint32_t budget,
              const vk::Buffer& indices) override {
    const AttentionShape& s = layer_.shape;
    const uint32_t candidates = block.candidates();
    const layouts::OracleScoresPush push{s.heads, s.kv_heads, s.tokens, block.n_queries, candidates, s.tokens, float(layer_.scale)};
    pass.dispatch(scores_kernel_, {inputs.queries, &layer_.keys, inputs.dense_lse, &scores_}, push,
                  ceil_div(candidates, 128), 1, 1, "attention_scores");
    topk_.record(pass, scores_, s.kv_heads, candidates, s.tokens, budget, indices, budget);
  }

 private:
  const GpuLayer& layer_;
  vk::Kernel scores_kernel_;
  TopK topk_;
  vk::Buffer scores_;
};

}  // namespace

std::unique_ptr<Method> make_tova(const vk::Device& device, const GpuLayer& layer, const MethodOptions&, Mode, uint32_t) {
  return std::make_unique<Tova>(device, layer);
}

}  // namespace kv
