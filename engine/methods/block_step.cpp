#include "methods/block_step.h"

#include "base/error.h"
#include "methods/table.h"

namespace kv {

std::vector<Block> blocks_with_candidates(Mode mode, uint32_t tokens, uint32_t probes, uint32_t chunk,
                                          uint32_t last_chunks) {
  std::vector<Block> all = mode == Mode::decode ? decode_blocks(tokens, probes) : prefill_blocks(tokens, chunk);
  std::vector<Block> blocks;
  for (const Block& b : all)
    if (b.candidates() > 0) blocks.push_back(b);
  if (mode == Mode::prefill && last_chunks > 0 && blocks.size() > last_chunks)
    blocks.erase(blocks.begin(), blocks.end() - last_chunks);
  if (blocks.empty()) throw InputError("the capture has no block with keys to select from (T too short for the chunk?)");
  return blocks;
}

BlockQueries::BlockQueries(const vk::Device& device, const CaptureLayer& layer, uint32_t max_queries)
    : layer_(layer), buffer_(device, size_t(layer.shape.heads) * max_queries * layer.shape.dim * dtype_size(layer.dtype)) {}

void BlockQueries::upload(const Block& block) {
  std::vector<uint32_t> positions(block.n_queries);
  for (uint32_t i = 0; i < block.n_queries; ++i) positions[i] = block.first_query + i;
  buffer_.upload(gather_queries(layer_.shape, layer_.dtype, layer_.q->data, positions));
}

AttentionRequest sparse_request(const vk::Buffer& queries, const Block& block, const vk::Buffer& selection,
                                uint32_t heads_per_list, uint32_t width) {
  AttentionRequest r{&queries, block.n_queries, block.first_query, &selection, heads_per_list, width};
  if (block.mode == Mode::prefill) {
    r.own_first = block.first_query;
    r.own_count = block.n_queries;
  }
  return r;
}

const CaptureLayer* choosing_layer(const Capture& capture, const CaptureLayer& layer, const std::string& method,
                                   const MethodOptions& options, bool or_null) {
  const uint32_t chooser = selecting_layer(find_method(method), uint32_t(layer.index), options);
  if (chooser == uint32_t(layer.index)) return &layer;
  if (const CaptureLayer* found = capture.find_layer(int(chooser)); found || or_null) return found;
  throw InputError(method + " attends layer " + std::to_string(layer.index) + " with the set layer " +
                       std::to_string(chooser) + " chose, and the capture holds layers " + capture.layer_indices() +
                       ": capture every layer (kvscope capture --layers all)",
                   "layers");
}

ChoosingLayer::ChoosingLayer(const vk::Device& device, const Capture& capture, const CaptureLayer& evaluated,
                             const CaptureLayer& chooser, uint32_t max_queries) {
  if (&chooser == &evaluated) return;
  layer = std::make_unique<GpuLayer>(device, capture, chooser);
  queries = std::make_unique<BlockQueries>(device, chooser, max_queries);
}

BlockInputs ChoosingLayer::inputs(const Block& block, const BlockInputs& own) const {
  if (!queries) return own;
  queries->upload(block);
  return {&queries->buffer(), nullptr};
}

void record_selection_step(vk::Pass& pass, Method& method, const GpuLayer& gpu, const Block& block,
                           const BlockInputs& inputs, uint32_t budget, const vk::Buffer& list, const Attention& sparse,
                           const SelectionMetrics& metrics, const StepReference& reference,
                           const vk::Buffer* layer_queries) {
  const uint32_t width = method.list_width(budget), per_row = selection_rows(gpu.shape, method.granularity()).heads_per_row;
  {
    vk::Pass::PartScope part(pass, vk::Part::selection);
    method.record(pass, block, inputs, budget, list);
  }
  {
    vk::Pass::PartScope part(pass, vk::Part::attention);
    sparse.record(pass, gpu, sparse_request(layer_queries ? *layer_queries : *inputs.queries, block, list, per_row, width),
                  "sparse_attention");
  }
  metrics.record(pass, block.n_queries, *reference.dense, sparse, list, width, per_row, *reference.oracle_list, budget,
                 reference.oracle_heads_per_row, reference.needle, block.candidates());
}

}  // namespace kv
