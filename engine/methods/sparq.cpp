// SparQ (docs/methods.md): per query head, scores from the r largest-magnitude
// query components, then top-k. Prefill scores the chunk's mean query.
#include "../shaders/layouts.h"
#include "methods/kernels.h"
#include "methods/mean_query.h"
#include "methods/registry.h"
#include "sparq_scores.spv.h"
#include "topk.h"

namespace kv {
namespace {

// sparq_scores' loop iterations an invocation, exit tests included, as
// lavapipe counts them (vk::DeviceInfo::loop_limit): per pass of four heads,
// finding the kept channels (a loop over this invocation's channels, each
// ranked against all d), and per pass and tile of keys, its d / 8 pieces.
uint64_t sparq_setup_iterations(const AttentionShape& s) {
  const uint64_t channels = ceil_div(s.dim, 128) + 1;
  return head_passes(s) * (channels * (kHeadsAtOnce + 1) + channels * (s.dim + 1) + 1);
}
uint64_t sparq_tile_iterations(const AttentionShape& s) {
  return head_passes(s) * (1 + (s.dim / 8 + 1) * (4 + 1) + kHeadsAtOnce + 1);
}

class Sparq final : public Method {
 public:
  Sparq(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options)
      : layer_(layer),
        r_(options.sparq_r),
        mean_query_(device, layer),
        scores_kernel_(make_layer_kernel<layouts::SparqPush>(device, "sparq_scores", sparq_scores_spirv, 3, layer.shape,
                                                             layer.dtype)),
        topk_(device),
        scores_(device, size_t(layer.shape.heads) * layer.shape.tokens * 4),
        max_tiles_(units_within_loop_limit(device, sparq_tile_iterations(layer.shape), sparq_setup_iterations(layer.shape))) {}

  std::string name() const override { return "sparq"; }
  Granularity granularity() const override { return Granularity::query_head; }
  ScoreView scores() const override { return {&scores_, layer_.shape.heads, layer_.shape.tokens, 1}; }
  nlohmann::json params() const override { return {{"r", r_}}; }

  void record(vk::Pass& pass, const Block& block, const BlockInputs& inputs, uint32_t budget,
              const vk::Buffer& indices) override {
    const AttentionShape& s = layer_.shape;
    const uint32_t candidates = block.candidates();
    const QuerySource query = mean_query_.record(pass, *inputs.queries, block.n_queries);
    const layouts::SparqPush push{s.heads, s.kv_heads, s.tokens, candidates, s.tokens, r_, query.raw_query};
    pass.dispatch(scores_kernel_, {query.buffer, &layer_.keys, &scores_}, push,
                  tile_walkers(candidates, max_tiles_), s.kv_heads, 1, "partial_scores");
    topk_.record(pass, scores_, s.heads, candidates, s.tokens, budget, indices, budget);
  }

 private:
  const GpuLayer& layer_;
  uint32_t r_;
  MeanQuery mean_query_;
  vk::Kernel scores_kernel_;
  TopK topk_;
  vk::Buffer scores_;
  uint32_t max_tiles_;  // a walker's tiles under the device's loop limit; 0: none
};

}  // namespace

std::unique_ptr<Method> make_sparq(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options, Mode,
                                   uint32_t) {
  return std::make_unique<Sparq>(device, layer, options);
}

}  // namespace kv
