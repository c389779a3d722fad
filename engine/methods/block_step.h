#pragma once
#include <memory>
#include <string>
// Pieces of one selection step shared by the evaluator (eval, select) and the
// inspector (the viewer): the block list, its queries on the device, the rows
// of a selection, and the attended set of docs/methods.md.
#include <vector>

#include "io/capture.h"
#include "kernels/attention.h"
#include "kernels/selection_metrics.h"
#include "methods/method.h"

namespace kv {

// The blocks of a regime that have candidate keys (prefill chunk 0 has none);
// prefill keeps the last `last_chunks` when non-zero.
std::vector<Block> blocks_with_candidates(Mode mode, uint32_t tokens, uint32_t probes, uint32_t chunk,
                                          uint32_t last_chunks = 0);

// Queries in the largest block of a regime: 1 per decode probe, `chunk` per prefill chunk.
inline uint32_t max_block_queries(Mode mode, uint32_t chunk) { return mode == Mode::decode ? 1 : chunk; }

// The block's queries [H, n, d] in a device buffer sized for the largest block.
class BlockQueries {
 public:
  BlockQueries(const vk::Device& device, const CaptureLayer& layer, uint32_t max_queries);
  void upload(const Block& block);
  const vk::Buffer& buffer() const { return buffer_; }

 private:
  const CaptureLayer& layer_;
  vk::Buffer buffer_;
};

// The attended set A of docs/methods.md: the selection, plus the chunk's own causal keys in prefill.
AttentionRequest sparse_request(const vk::Buffer& queries, const Block& block, const vk::Buffer& selection,
                                uint32_t heads_per_list, uint32_t width);

// What a method's step is measured against: the block's dense attention, the
// oracle's list for the same budget (and how its rows map to heads), the needle.
struct StepReference {
  const Attention* dense = nullptr;
  const vk::Buffer* oracle_list = nullptr;
  uint32_t oracle_heads_per_row = 1;
  NeedleSpan needle;
};

// The capture's layer whose queries and keys choose `method`'s set for
// `layer` (selecting_layer in methods/table.h: another one for LessIsMore's
// reusing layers); InputError where the capture lacks it, unless `or_null`.
const CaptureLayer* choosing_layer(const Capture& capture, const CaptureLayer& layer, const std::string& method,
                                   const MethodOptions& options, bool or_null = false);

// Where a method's set for a layer is chosen at another one: that layer on
// the device and its queries (nothing where the method chooses at the layer
// itself). The method is built on or_else(the layer's own) and records with
// inputs(block, the layer's own).
struct ChoosingLayer {
  ChoosingLayer(const vk::Device& device, const Capture& capture, const CaptureLayer& evaluated,
                const CaptureLayer& chooser, uint32_t max_queries);
  const GpuLayer& or_else(const GpuLayer& own) const { return layer ? *layer : own; }
  BlockInputs inputs(const Block& block, const BlockInputs& own) const;

  std::unique_ptr<GpuLayer> layer;
  std::unique_ptr<BlockQueries> queries;
};

// Records into one pass the method's selection into `list` (Part::selection),
// sparse attention over the attended set (Part::attention), and the metrics
// against `reference` (Part::model: neither; read them with metrics.read()
// after the pass ran). eval and the viewer's inspector share it. `inputs`
// are the method's; the sparse attention reads `layer_queries` where the
// method chose from another layer's (LessIsMore), else inputs.queries.
void record_selection_step(vk::Pass& pass, Method& method, const GpuLayer& gpu, const Block& block,
                           const BlockInputs& inputs, uint32_t budget, const vk::Buffer& list, const Attention& sparse,
                           const SelectionMetrics& metrics, const StepReference& reference,
                           const vk::Buffer* layer_queries = nullptr);

}  // namespace kv
