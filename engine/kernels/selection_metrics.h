#pragma once
#include <vector>

#include "io/block.h"
#include "io/capture.h"
#include "kernels/attention.h"

namespace kv {

// Per query head metrics of one block (docs/methods.md): coverage and output
// error (means over the block's queries), recall against the oracle's set.
struct HeadMetrics {
  double coverage = 0, recall = 0, output_error = 0;
  double needle_recall = -1;  // -1: no needle token among the candidates
};

// Needle tokens [first, end) of a capture; empty when it has none.
struct NeedleSpan {
  uint32_t first = 0, end = 0;
};
NeedleSpan needle_of(const Capture& capture);

// Owner of selection_metrics.comp.
class SelectionMetrics {
 public:
  SelectionMetrics(const vk::Device& device, const AttentionShape& shape);
  // `dense` and `sparse` hold the block's outputs; the lists are [rows, stride]
  // with `*_heads_per_row` query heads per row.
  void record(vk::Pass& pass, uint32_t n_queries, const Attention& dense, const Attention& sparse,
              const vk::Buffer& selection, uint32_t selection_stride, uint32_t selection_heads_per_row,
              const vk::Buffer& oracle, uint32_t oracle_stride, uint32_t oracle_heads_per_row, NeedleSpan needle,
              uint32_t candidates) const;
  std::vector<HeadMetrics> read() const;

 private:
  AttentionShape shape_;
  vk::Kernel kernel_;
  vk::Buffer metrics_;
};

}  // namespace kv
