// SnapKV, H2O and SampleAttention (docs/methods.md): per KV head, keys ranked
// by the attention a window of queries paid them (SnapKV: the last snap_window
// queries, pooled; H2O: every query so far; SampleAttention: sampled queries
// at a stride), plus the most recent candidates.
#include <algorithm>
#include <limits>

#include "../shaders/layouts.h"
#include "methods/kernels.h"
#include "methods/registry.h"
#include "methods/window.h"
#include "recent_keys.spv.h"
#include "snapkv_pool.spv.h"
#include "topk.h"
#include "window_log_sum_exp.spv.h"
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

// Loop iterations (each loop's exit test included) window_scores.comp and
// window_log_sum_exp.comp complete per window row and per key, for devices
// that end loops early (vk::DeviceInfo::loop_limit).
uint32_t window_row_iterations(uint32_t dim) { return 1 + 2 + (dim / 8 + 1); }  // the row, the query's load, the key's chunks
uint32_t lse_key_iterations(uint32_t dim) { return 1 + (dim / 8 + 1); }  // the key, its chunks (4 channels unrolled)

class WindowMethod final : public Method {
 public:
  using Kind = WindowKind;

  WindowMethod(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options, Kind kind)
      : layer_(layer),
        options_(options),
        kind_(kind),
        lse_kernel_(make_layer_kernel<layouts::WindowPush>(device, "window_log_sum_exp", window_log_sum_exp_spirv, 3,
                                                           layer.shape, layer.dtype)),
        scores_kernel_(make_layer_kernel<layouts::WindowPush>(device, "window_scores", window_scores_spirv, 4,
                                                              layer.shape, layer.dtype)),
        pool_kernel_(device, "snapkv_pool", snapkv_pool_spirv, {2, sizeof(layouts::WindowPush)}, {}),
        recent_kernel_(device, "recent_keys", recent_keys_spirv, {1, sizeof(layouts::RecentPush)}, {}),
        topk_(device),
        queries_(device, size_t(layer.shape.heads) * max_window(kind, options, layer.shape.tokens) * layer.shape.dim *
                             dtype_size(layer.dtype)),
        lse_(device, size_t(layer.shape.heads) * layer.shape.tokens * 4),
        scores_(device, size_t(layer.shape.kv_heads) * layer.shape.tokens * 4),
        pooled_(device, kind == Kind::snapkv ? size_t(layer.shape.kv_heads) * layer.shape.tokens * 4 : 4) {
    if (layer.host_queries.empty()) throw InputError(name() + " needs the layer's queries");
    const uint32_t dim = layer.shape.dim;
    if (!within_loop_limit(device, uint64_t(ceil_div(layer.shape.tokens, 128)) * lse_key_iterations(dim)))
      throw InputError(name() + ": " + std::to_string(layer.shape.tokens) + " tokens at d=" + std::to_string(dim) +
                       " exceed the loop limit of " + device.info().name + " (window_log_sum_exp)");
    if (const uint32_t rows = units_within_loop_limit(device, uint64_t(layer.shape.group()) * window_row_iterations(dim));
        rows != 0)
      rows_per_slice_ = rows;
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
      pass.dispatch(lse_kernel_, {&queries_, &layer_.keys, &lse_}, push, w.count, s.heads, 1, "window_lse");
      for (push.slice_first = 0; push.slice_first < w.count; push.slice_first += push.slice_count) {
        push.slice_count = std::min(w.count - push.slice_first, rows_per_slice_);
        pass.dispatch(scores_kernel_, {&queries_, &layer_.keys, &lse_, &scores_}, push, ceil_div(prefix, 128),
                      s.kv_heads, 1, "window_scores");
      }
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
  const GpuLayer& layer_;
  MethodOptions options_;
  Kind kind_;
  vk::Kernel lse_kernel_, scores_kernel_, pool_kernel_, recent_kernel_;
  TopK topk_;
  vk::Buffer queries_, lse_, scores_, pooled_;
  uint32_t rows_per_slice_ = std::numeric_limits<uint32_t>::max();  // window rows per window_scores dispatch
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
