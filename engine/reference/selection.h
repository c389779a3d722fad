#pragma once
// Room reference/: the float64 CPU references of every kernel, linked only by
// the tests and `kvscope dense --check`; it may include any CPU-only header.
#include <cstdint>
#include <string>
#include <vector>

#include "io/block.h"
#include "io/capture.h"
#include "methods/method_options.h"

namespace kv::reference {

// A layer as float64 work sees it: the stored values, widened.
struct HostLayer {
  AttentionShape shape;
  double scale = 0;
  std::vector<float> q, k, v;  // [H, T, d], [G, T, d], [G, T, d]
};

HostLayer host_layer(const Capture& capture, const CaptureLayer& layer);

// Rows (query heads or KV heads) of ascending key positions.
using Selection = std::vector<std::vector<int32_t>>;

// The selection of docs/methods.md, literally, in float64; its rows are those
// of the method's granularity in method_table().
Selection select(const std::string& method, const MethodOptions& options, const HostLayer& layer, const Block& block,
                 uint32_t budget);
bool has_reference(const std::string& method);

// QuoKA's key scores of KV head `kv_head` (docs/methods.md steps 1-4): what its top-k ranks.
std::vector<double> quoka_scores(const HostLayer& layer, const MethodOptions& options, const Block& block, uint32_t kv_head);

// Fier's approximate scores q . k_tilde of the candidates, per selection row
// (query head, or KV head aggregated over its heads): what its top-k ranks.
std::vector<std::vector<double>> fier_scores(const HostLayer& layer, const MethodOptions& options, const Block& block);

// SparQ's and Loki's approximate scores of the candidates, per query head:
// what their top-k ranks.
std::vector<std::vector<double>> sparq_scores(const HostLayer& layer, const MethodOptions& options, const Block& block);
std::vector<std::vector<double>> loki_scores(const HostLayer& layer, const MethodOptions& options, const Block& block);

// SnapKV, H2O or SampleAttention's scores of KV head `kv_head` for `budget`:
// its candidates before the recent ones, SnapKV's average-pooled. What its top-k ranks.
std::vector<double> window_scores(const HostLayer& layer, const std::string& method, const MethodOptions& options,
                                  const Block& block, uint32_t budget, uint32_t kv_head);

// QuoKA decides twice per KV head: which n_q queries of each of its heads are
// least similar to their mean (and, where a mean over several heads adds them
// rank by rank, in which order), and which `budget` keys score highest. Per
// KV head, the smallest gap between the values on either side of a cut or of
// two neighbouring ranks (infinity where nothing is decided): where it is near
// float32 rounding, a float32 implementation may rightly decide the other way.
std::vector<double> quoka_decision_gaps(const HostLayer& layer, const MethodOptions& options, const Block& block,
                                        uint32_t budget);

// Quest decides once per row: which pages score highest. Per row, the gap
// between the page scores on either side of the cut, relative to the larger
// (infinity where nothing is cut): where it is near float32 rounding, a
// float32 implementation may rightly keep the other page, 16 tokens at once.
std::vector<double> quest_decision_gaps(const HostLayer& layer, const MethodOptions& options, const Block& block,
                                        uint32_t budget);

struct HeadMetrics {
  double coverage = 0, recall = 0, output_error = 0;
  double needle_recall = -1;  // -1: no needle token among the candidates
};

// Per query head: coverage and output error of the attended set (the
// selection, plus the chunk's causal keys in prefill), means over the block's
// queries, recall of the selection against the oracle's, and the fraction of
// the needle's tokens [needle_first, needle_end) among the candidates that it selects.
std::vector<HeadMetrics> metrics(const HostLayer& layer, const Block& block, const Selection& selection,
                                 Granularity selection_granularity, const Selection& oracle,
                                 Granularity oracle_granularity, uint32_t needle_first = 0, uint32_t needle_end = 0);

}  // namespace kv::reference
