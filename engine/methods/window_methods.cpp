// SnapKV, H2O and SampleAttention (docs/methods.md): per KV head, keys ranked
// by the attention a window of queries paid them (SnapKV: the last snap_window
// queries, pooled; H2O: every query so far; SampleAttention: sampled queries
// at a stride), plus the most recent candidates.
#include <algorithm>

#include "../shaders/layouts.h"
#include "kernels/layer_kernel.h"
#include "kernels/topk.h"
#include "methods/table.h"
#include "methods/window.h"
#include "recent_keys.spv.h"
#include "snapkv_pool.spv.h"
#include "window_lse.spv.h"
#include "window_row_stats.spv.h"
#include "window_scores.spv.h"

namespace kv {

namespace {

// The most queries a block's window holds, for sizing the gathered queries.
uint32_t max_window(WindowKind kind, const MethodOptions& o, uint32_t tokens) {
  switch (kind) {
    case WindowKind::snapkv: return std::min(o.snap_window, tokens);
    case WindowKind::sample_attention: return std::min(o.sample_queries, tokens);
    case WindowKind::h2o: return tokens;
  }
  return tokens;
}

// window_tile.glsl's tiles: 64 window rows by 64 keys.
constexpr uint32_t kTile = 64;
// window_row_stats splits each row's keys until this many workgroups run
// (enough to fill a large GPU), in splits of at least kMinSplitTiles key tiles.
constexpr uint32_t kStatsWorkgroups = 1024, kMinSplitTiles = 4;

// Loop iterations (each loop's exit test included) window_row_stats.comp and
// window_scores.comp complete per tile, for devices that end loops early
// (vk::DeviceInfo::loop_limit): the tile loop's test and tile_logits' channel
// steps (d / 8 and the exit test); the loops inside a step are unrolled.
uint32_t window_tile_iterations(uint32_t dim) { return 1 + (dim / 8 + 1); }

class WindowMethod final : public Method {
 public:
  using Kind = WindowKind;

  WindowMethod(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options, Kind kind)
      : layer_(layer),
        options_(options),
        kind_(kind),
        max_tiles_per_split_(units_within_loop_limit(device, window_tile_iterations(layer.shape.dim))),
        stats_kernel_(make_layer_kernel<layouts::WindowPush>(device, "window_row_stats", window_row_stats_spirv, 3,
                                                             layer.shape, layer.dtype)),
        lse_kernel_(device, "window_lse", window_lse_spirv, {2, sizeof(layouts::WindowPush)}, {}),
        scores_kernel_(make_layer_kernel<layouts::WindowPush>(device, "window_scores", window_scores_spirv, 4,
                                                              layer.shape, layer.dtype)),
        pool_kernel_(device, "snapkv_pool", snapkv_pool_spirv, {2, sizeof(layouts::WindowPush)}, {}),
        recent_kernel_(device, "recent_keys", recent_keys_spirv, {1, sizeof(layouts::RecentPush)}, {}),
        topk_(device),
        queries_(device, size_t(layer.shape.heads) * max_window(kind, options, layer.shape.tokens) * layer.shape.dim *
                             dtype_size(layer.dtype)),
        row_stats_(device, most_row_stats(max_window(kind, options, layer.shape.tokens)) * 8),
        lse_(device, size_t(layer.shape.heads) * max_window(kind, options, layer.shape.tokens) * 4),
        scores_(device, size_t(layer.shape.kv_heads) * layer.shape.tokens * 4),
        pooled_(device, kind == Kind::snapkv ? size_t(layer.shape.kv_heads) * layer.shape.tokens * 4 : 4) {
    if (layer.host_queries.empty()) throw InputError(name() + " needs the layer's queries");
    const uint32_t most_rows = layer.shape.group() * max_window(kind, options, layer.shape.tokens);
    if (max_tiles_per_split_ != 0 && ceil_div(most_rows, kTile) > max_tiles_per_split_)
      throw InputError(name() + ": a window of " + std::to_string(most_rows) + " query rows per KV head exceeds the loop limit of " +
                       device.info().name + " (window_scores)");
  }

  std::string name() const override {
    return kind_ == Kind::snapkv ? "snapkv" : kind_ == Kind::h2o ? "h2o" : "sampleattention";
  }
  Granularity granularity() const override { return Granularity::kv_head; }
  ScoreView scores() const override {
    return {kind_ == Kind::snapkv ? &pooled_ : &scores_, layer_.shape.kv_heads, layer_.shape.tokens, 1};
  }
  nlohmann::json params() const override {
    if (kind_ == Kind::h2o) return {{"recent", "budget/2"}};
    if (kind_ == Kind::sample_attention)
      return {{"samples", options_.sample_queries}, {"stride", options_.sample_stride}, {"recent", "budget/8"}};
    return {{"window", options_.snap_window}, {"pool", options_.snap_pool}};
  }

  void record(vk::Pass& pass, const Block& block, const BlockInputs&, uint32_t budget,
              const vk::Buffer& indices) override {
    const AttentionShape& s = layer_.shape;
    const uint32_t n = block.candidates();
    const Window w = window(kind_, options_, block, budget);
    const uint32_t prefix = n - w.recent, heavy = budget - w.recent;
    layouts::WindowPush push{s.heads,  s.kv_heads, s.tokens,  w.first, w.count, w.stride, prefix,
                             s.tokens, float(layer_.scale / std::log(2.0)), options_.snap_pool};
    if (heavy > 0 && prefix > 0) {
      // Only the window's query rows go to the device, [H, count, d]: all of a
      // long capture's queries would exceed what one storage buffer may bind.
      std::vector<uint32_t> positions(w.count);
      for (uint32_t i = 0; i < w.count; ++i) positions[i] = w.first + i * w.stride;
      queries_.upload(gather_queries(s, layer_.dtype, layer_.host_queries, positions));
      const uint32_t rows = s.group() * w.count;
      const KeySplits splits = key_splits(rows, positions.back() + 1);
      push.n_splits = splits.count;
      push.split_keys = splits.keys;
      pass.dispatch(stats_kernel_, {&queries_, &layer_.keys, &row_stats_}, push, ceil_div(rows, kTile), splits.count,
                    s.kv_heads, "window_row_stats");
      pass.dispatch(lse_kernel_, {&row_stats_, &lse_}, push, ceil_div(s.heads * w.count, 128), 1, 1, "window_lse");
      pass.dispatch(scores_kernel_, {&queries_, &layer_.keys, &lse_, &scores_}, push, ceil_div(prefix, kTile), s.kv_heads,
                    1, "window_scores");
      const vk::Buffer* ranked = &scores_;
      if (kind_ == Kind::snapkv) {
        pass.dispatch(pool_kernel_, {&scores_, &pooled_}, push, ceil_div(prefix, 128), s.kv_heads, 1, "pool");
        ranked = &pooled_;
      }
      topk_.record(pass, *ranked, s.kv_heads, prefix, s.tokens, heavy, indices, budget);
    }
    const layouts::RecentPush tail{s.kv_heads, budget, heavy > 0 ? std::min(heavy, prefix) : 0, prefix, w.recent};
    pass.dispatch(recent_kernel_, {&indices}, tail, s.kv_heads, 1, 1, "recent_keys");
  }

 private:
  struct KeySplits {
    uint32_t count, keys;  // splits of `keys` keys each (a multiple of kTile)
  };

  // How window_row_stats splits the keys [0, keys) of `rows` window rows a KV
  // head. The count never falls as `keys` grows (trailing splits may be
  // empty), so most_row_stats may size the statistics at the capture's length.
  KeySplits key_splits(uint32_t rows, uint32_t keys) const {
    const uint32_t tiles = ceil_div(keys, kTile), row_tiles = ceil_div(rows, kTile);
    uint32_t count = std::clamp(ceil_div(kStatsWorkgroups, row_tiles * layer_.shape.kv_heads), 1u,
                                ceil_div(tiles, kMinSplitTiles));
    if (max_tiles_per_split_ != 0) count = std::max(count, ceil_div(tiles, max_tiles_per_split_));
    return {count, ceil_div(tiles, count) * kTile};
  }

  // The most (row, split) statistics a block's window may need, over window
  // lengths up to `window` (keys up to the capture's length).
  size_t most_row_stats(uint32_t window) const {
    size_t most = 0;
    for (uint32_t count = 1; count <= window; ++count)
      most = std::max(most, size_t(layer_.shape.heads) * count *
                                key_splits(layer_.shape.group() * count, layer_.shape.tokens).count);
    return most;
  }

  const GpuLayer& layer_;
  MethodOptions options_;
  Kind kind_;
  uint32_t max_tiles_per_split_;  // key tiles per window_row_stats split, row tiles of window_scores, under a loop limit; 0: none
  vk::Kernel stats_kernel_, lse_kernel_, scores_kernel_, pool_kernel_, recent_kernel_;
  TopK topk_;
  vk::Buffer queries_, row_stats_, lse_, scores_, pooled_;
};

}  // namespace

std::unique_ptr<Method> make_snapkv(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options, Mode,
                                    uint32_t) {
  return std::make_unique<WindowMethod>(device, layer, options, WindowMethod::Kind::snapkv);
}

std::unique_ptr<Method> make_sample_attention(const vk::Device& device, const GpuLayer& layer,
                                              const MethodOptions& options, Mode, uint32_t) {
  return std::make_unique<WindowMethod>(device, layer, options, WindowMethod::Kind::sample_attention);
}

std::unique_ptr<Method> make_h2o(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options, Mode,
                                 uint32_t) {
  return std::make_unique<WindowMethod>(device, layer, options, WindowMethod::Kind::h2o);
}

}  // namespace kv
