// StreamingLLM (docs/methods.md): attention sinks plus a recent window, one list per KV head.
#include "../shaders/layouts.h"
#include "methods/table.h"
#include "streaming_indices.spv.h"

namespace kv {
namespace {

class Streaming final : public Method {
 public:
  Streaming(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options)
      : layer_(layer),
        options_(options),
        kernel_(device, "streaming_indices", streaming_indices_spirv, {1, sizeof(layouts::StreamingPush)}, {}) {}

  std::string name() const override { return "streaming"; }
  Granularity granularity() const override { return Granularity::kv_head; }
  nlohmann::json params() const override { return {{"n_sink", options_.n_sink}}; }

  void record(vk::Pass& pass, const Block& block, const BlockInputs&, uint32_t budget, const vk::Buffer& indices) override {
    layouts::StreamingPush push{layer_.shape.kv_heads, block.candidates(), budget, options_.n_sink};
    pass.dispatch(kernel_, {&indices}, push, layer_.shape.kv_heads, 1, 1, "streaming_indices");
  }

 private:
  const GpuLayer& layer_;
  MethodOptions options_;
  vk::Kernel kernel_;
};

}  // namespace

std::unique_ptr<Method> make_streaming(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options, Mode,
                                       uint32_t) {
  return std::make_unique<Streaming>(device, layer, options);
}

}  // namespace kv
