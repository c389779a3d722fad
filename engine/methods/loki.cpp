// Loki (docs/methods.md): per query head, approximate logits in the KV head's
// principal subspace of keys (basis from the capture's keys, once per cache),
// then top-k. Prefill scores the chunk's mean query.
#include "../shaders/layouts.h"
#include "base/error.h"
#include "kernels/layer_kernel.h"
#include "kernels/topk.h"
#include "loki_project_keys.spv.h"
#include "loki_project_query.spv.h"
#include "loki_scores.spv.h"
#include "methods/mean_query.h"
#include "methods/pca.h"
#include "methods/table.h"

namespace kv {
namespace {

// loki_scores' loop iterations an invocation, exit tests included, as lavapipe
// counts them (vk::DeviceInfo::loop_limit), counting the unrolled loops too:
// per pass of four heads, staging their projected queries, and per pass and
// tile of tokens, the rank's components in batches of 32.
uint64_t loki_setup_iterations(const AttentionShape& s, uint32_t rank) {
  return head_passes(s) * (1 + ceil_div(rank, 128) + 1) + 1;
}
uint64_t loki_tile_iterations(const AttentionShape& s, uint32_t rank) {
  return head_passes(s) * (1 + (ceil_div(rank, 32) + 1) * (1 + 2 * (32 + 1)) + kHeadsAtOnce + 1);
}

// loki_scores walks tile_walkers' tiles of 128 keys, an invocation a key, and
// reads a tile's projected keys as one run of LOKI_TILE (layouts.h).
static_assert(LOKI_TILE == 128, "a tile of projected keys is a tile_walkers tile");

uint32_t checked_rank(const AttentionShape& shape, uint32_t rank) {
  rank = std::min(rank, shape.dim);
  if (size_t(rank) * shape.dim > LOKI_MAX_BASIS)
    throw InputError(std::to_string(rank) + " principal components are too many for d=" + std::to_string(shape.dim) +
                         " (rank x d must be at most " + std::to_string(LOKI_MAX_BASIS) + ")",
                     "loki-r");
  return rank;
}

class Loki final : public Method {
 public:
  Loki(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options)
      : layer_(layer),
        rank_(checked_rank(layer.shape, options.loki_r)),
        mean_query_(device, layer),
        project_kernel_(make_layer_kernel<layouts::LokiPush>(device, "loki_project_keys", loki_project_keys_spirv, 3,
                                                             layer.shape, layer.dtype)),
        project_query_kernel_(make_layer_kernel<layouts::LokiPush>(device, "loki_project_query",
                                                                   loki_project_query_spirv, 3, layer.shape, layer.dtype)),
        scores_kernel_(make_layer_kernel<layouts::LokiPush>(device, "loki_scores", loki_scores_spirv, 3, layer.shape,
                                                            layer.dtype)),
        topk_(device),
        basis_(device, size_t(layer.shape.kv_heads) * rank_ * layer.shape.dim * 4),
        projected_(device, size_t(layer.shape.kv_heads) * ceil_div(layer.shape.tokens, LOKI_TILE) * LOKI_TILE * rank_ * 4),
        projected_query_(device, size_t(layer.shape.kv_heads) * head_passes(layer.shape) * rank_ * 16),
        scores_(device, size_t(layer.shape.heads) * layer.shape.tokens * 4),
        max_tiles_(units_within_loop_limit(device, loki_tile_iterations(layer.shape, rank_),
                                           loki_setup_iterations(layer.shape, rank_))) {
    const AttentionShape& s = layer.shape;
    const std::vector<float> keys = to_float(layer.dtype, layer.host_keys);
    std::vector<float> basis;
    for (uint32_t g = 0; g < s.kv_heads; ++g)
      for (double x : principal_components(std::span(keys).subspan(size_t(g) * s.tokens * s.dim, size_t(s.tokens) * s.dim),
                                           s.tokens, s.dim, rank_))
        basis.push_back(float(x));
    basis_.upload_values<float>(basis);
    vk::Pass build(device);
    const layouts::LokiPush push{s.heads, s.kv_heads, s.tokens, s.tokens, s.tokens, rank_};
    build.dispatch(project_kernel_, {&layer.keys, &basis_, &projected_}, push, ceil_div(s.tokens, 128), s.kv_heads, 1,
                   "project_keys");
    build.run();
    build_times_ = build.stage_times();
  }

  std::string name() const override { return "loki"; }
  Granularity granularity() const override { return Granularity::query_head; }
  ScoreView scores() const override { return {&scores_, layer_.shape.heads, layer_.shape.tokens, 1}; }
  nlohmann::json params() const override { return {{"r", rank_}}; }
  std::vector<vk::StageTime> build_times() const override { return build_times_; }

  void record(vk::Pass& pass, const Block& block, const BlockInputs& inputs, uint32_t budget,
              const vk::Buffer& indices) override {
    const AttentionShape& s = layer_.shape;
    const uint32_t candidates = block.candidates();
    const QuerySource query = mean_query_.record(pass, *inputs.queries, block.n_queries);
    const layouts::LokiPush push{s.heads, s.kv_heads, s.tokens, candidates, s.tokens, rank_, query.raw_query};
    pass.dispatch(project_query_kernel_, {query.buffer, &basis_, &projected_query_}, push, uint32_t(head_passes(s)),
                  s.kv_heads, 1, "query_projection");
    pass.dispatch(scores_kernel_, {&projected_query_, &projected_, &scores_}, push,
                  tile_walkers(candidates, max_tiles_), s.kv_heads, 1, "subspace_scores");
    topk_.record(pass, scores_, s.heads, candidates, s.tokens, budget, indices, budget);
  }

 private:
  const GpuLayer& layer_;
  uint32_t rank_;
  MeanQuery mean_query_;
  vk::Kernel project_kernel_, project_query_kernel_, scores_kernel_;
  TopK topk_;
  vk::Buffer basis_, projected_, projected_query_, scores_;
  uint32_t max_tiles_;  // a walker's tiles under the device's loop limit; 0: none
  std::vector<vk::StageTime> build_times_;
};

}  // namespace

std::unique_ptr<Method> make_loki(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options, Mode,
                                  uint32_t) {
  return std::make_unique<Loki>(device, layer, options);
}

}  // namespace kv
