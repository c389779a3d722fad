// SparQ (docs/methods.md): per query head, scores from the r largest-magnitude
// query components, then top-k. Prefill scores the chunk's mean query.
#include "../shaders/layouts.h"
#include "kernels/layer_kernel.h"
#include "kernels/topk.h"
#include "methods/mean_query.h"
#include "methods/table.h"
#include "sparq_kept_query.spv.h"
#include "sparq_scores.spv.h"

namespace kv {
namespace {

// sparq_scores' loop iterations an invocation, exit tests included, as
// lavapipe counts them (vk::DeviceInfo::loop_limit), counting the unrolled
// loops too: per pass of four heads, the first round's loads and the kept
// queries, and per pass and tile of keys, its rounds (key_rounds.glsl): loads,
// partial products, and the sums of the round's keys over their d / 8 chunks.
uint64_t sparq_setup_iterations(const AttentionShape& s) {
  const uint64_t unroll = 4, chunk_channels = 8;  // key_rounds.glsl's unroll; the kept values an invocation loads
  return head_passes(s) * (1 + (unroll + 1) + (chunk_channels + 1)) + 1;
}
uint64_t sparq_tile_iterations(const AttentionShape& s) {
  const uint32_t chunks = s.dim / 8, unroll = 4, round_keys = (128 / chunks) * unroll;
  const uint32_t rounds = ceil_div(128, round_keys), sums = ceil_div(kHeadsAtOnce * round_keys, 128);
  const uint64_t round = 1 + (unroll + 1) * 2 + unroll * (5 + kHeadsAtOnce + 1) + (sums + 1) + sums * (chunks + 1);
  return head_passes(s) * rounds * round;
}

// sparq_scores' walkers a KV head: its rounds keep four heads' partial sums in
// shared memory, and half of kTileWalkersPerKvHead, walking twice as far, took
// 105.5 us at 128k on the H100 against 112.8 (19.9 against 22.0 at 16k;
// docs/perf-experiments.md).
constexpr uint32_t kSparqWalkersPerKvHead = 64;

class Sparq final : public Method {
 public:
  Sparq(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options)
      : layer_(layer),
        r_(options.sparq_r),
        mean_query_(device, layer),
        kept_kernel_(make_layer_kernel<layouts::SparqPush>(device, "sparq_kept_query", sparq_kept_query_spirv, 2,
                                                           layer.shape, layer.dtype)),
        scores_kernel_(make_layer_kernel<layouts::SparqPush>(device, "sparq_scores", sparq_scores_spirv, 3, layer.shape,
                                                             layer.dtype)),
        topk_(device),
        kept_query_(device, size_t(layer.shape.kv_heads) * head_passes(layer.shape) * layer.shape.dim * 16),
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
    pass.dispatch(kept_kernel_, {query.buffer, &kept_query_}, push, uint32_t(head_passes(s)), s.kv_heads, 1,
                  "kept_channels");
    pass.dispatch(scores_kernel_, {&kept_query_, &layer_.keys, &scores_}, push,
                  tile_walkers(candidates, max_tiles_, kSparqWalkersPerKvHead), s.kv_heads, 1, "partial_scores");
    topk_.record(pass, scores_, s.heads, candidates, s.tokens, budget, indices, budget);
  }

 private:
  const GpuLayer& layer_;
  uint32_t r_;
  MeanQuery mean_query_;
  vk::Kernel kept_kernel_, scores_kernel_;
  TopK topk_;
  vk::Buffer kept_query_, scores_;
  uint32_t max_tiles_;  // a walker's tiles under the device's loop limit; 0: none
};

}  // namespace

std::unique_ptr<Method> make_sparq(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options, Mode,
                                   uint32_t) {
  return std::make_unique<Sparq>(device, layer, options);
}

}  // namespace kv
