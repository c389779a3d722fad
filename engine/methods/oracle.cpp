// oracle: the best set for the budget, from dense attention (docs/methods.md).
#include <algorithm>
#include <limits>

#include "../shaders/layouts.h"
#include "kernels/layer_kernel.h"
#include "kernels/topk.h"
#include "methods/table.h"
#include "oracle_decode_scores.spv.h"
#include "oracle_prefill_scores.spv.h"

namespace kv {
namespace {

// Loop iterations (exit tests included) oracle_prefill_scores.comp completes
// per tile of ORACLE_QUERY_TILE rows: the tile, its query loads (4 channels a
// step), the lse loads, and per row its dot product. Devices that end loops
// early (vk::DeviceInfo::loop_limit) get the rows in slices of whole tiles.
uint32_t tile_iterations(uint32_t dim) {
  const uint32_t loads = ceil_div(ORACLE_QUERY_TILE * (dim / 8), 128);
  return 1 + (loads + 1) + loads * 5 + 2 + ORACLE_QUERY_TILE * (1 + dim / 4 + 1) + 1;
}

class Oracle final : public Method {
 public:
  Oracle(const vk::Device& device, const GpuLayer& layer, Mode mode)
      : layer_(layer),
        mode_(mode),
        scores_kernel_(mode == Mode::decode
                           ? make_layer_kernel<layouts::OracleScoresPush>(device, "oracle_decode_scores", oracle_decode_scores_spirv,
                                                                          3, layer.shape, layer.dtype)
                           : make_layer_kernel<layouts::OracleScoresPush>(device, "oracle_prefill_scores",
                                                                          oracle_prefill_scores_spirv, 4, layer.shape, layer.dtype)),
        topk_(device),
        scores_(device, size_t(rows()) * layer.shape.tokens * sizeof(float)) {
    if (const uint32_t tiles = units_within_loop_limit(device, tile_iterations(layer.shape.dim)); tiles != 0)
      slice_rows_ = tiles * ORACLE_QUERY_TILE;
  }

  std::string name() const override { return "oracle"; }
  Granularity granularity() const override { return mode_ == Mode::decode ? Granularity::query_head : Granularity::kv_head; }
  ScoreView scores() const override { return {&scores_, rows(), layer_.shape.tokens, 1}; }
  nlohmann::json params() const override { return nlohmann::json::object(); }
  bool needs_dense_lse() const override { return mode_ == Mode::prefill; }

  void record(vk::Pass& pass, const Block& block, const BlockInputs& inputs, uint32_t budget,
              const vk::Buffer& indices) override {
    const AttentionShape& s = layer_.shape;
    const uint32_t candidates = block.candidates();
    layouts::OracleScoresPush push{s.heads, s.kv_heads, s.tokens, block.n_queries, candidates, s.tokens, float(layer_.scale)};
    if (mode_ == Mode::decode)
      pass.dispatch(scores_kernel_, {inputs.queries, &layer_.keys, &scores_}, push, ceil_div(candidates, 128), s.heads, 1,
                    "oracle_scores");
    else
      for (push.slice_first = 0; push.slice_first < s.group() * block.n_queries; push.slice_first += push.slice_count) {
        push.slice_count = std::min(s.group() * block.n_queries - push.slice_first, slice_rows_);
        pass.dispatch(scores_kernel_, {inputs.queries, &layer_.keys, inputs.dense_lse, &scores_}, push,
                      ceil_div(candidates, 128), s.kv_heads, 1, "oracle_scores");
      }
    topk_.record(pass, scores_, rows(), candidates, s.tokens, budget, indices, budget);
  }

 private:
  uint32_t rows() const { return mode_ == Mode::decode ? layer_.shape.heads : layer_.shape.kv_heads; }

  const GpuLayer& layer_;
  Mode mode_;
  vk::Kernel scores_kernel_;
  TopK topk_;
  vk::Buffer scores_;
  uint32_t slice_rows_ = std::numeric_limits<uint32_t>::max();  // prefill rows per oracle_scores dispatch
};

}  // namespace

std::unique_ptr<Method> make_oracle(const vk::Device& device, const GpuLayer& layer, const MethodOptions&, Mode mode,
                                    uint32_t) {
  return std::make_unique<Oracle>(device, layer, mode);
}

}  // namespace kv
