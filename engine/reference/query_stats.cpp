#include "reference/query_stats.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace kv::reference {

QueryStats query_stats(const Capture& capture, int layer_index, uint32_t head, const Block& block, uint32_t chunk,
                       uint32_t n_q) {
  const QueryRange range = query_stats_range(block, chunk);
  const CaptureLayer& layer = capture.layer(layer_index);
  const uint32_t d = layer.shape.dim, T = layer.shape.tokens, g = head / layer.shape.group();
  const size_t row_bytes = size_t(d) * dtype_size(layer.dtype);
  auto row = [&](const TensorView* t, uint32_t h, uint32_t position) {
    return to_float(layer.dtype, t->data.subspan((size_t(h) * T + position) * row_bytes, row_bytes));
  };
  const uint32_t n = range.last - range.first;
  std::vector<std::vector<float>> queries;
  std::vector<double> mean(d, 0.0);
  for (uint32_t i = range.first; i < range.last; ++i) {
    queries.push_back(row(layer.q, head, i));
    for (uint32_t c = 0; c < d; ++c) mean[c] += double(queries.back()[c]) / n;
  }
  std::vector<std::vector<float>> keys;
  for (uint32_t j = 0; j < range.last; ++j) keys.push_back(row(layer.k, g, j));
  const double scale = capture.scale(layer);
  double mean_norm = 0;
  for (double x : mean) mean_norm += x * x;
  mean_norm = std::sqrt(mean_norm);
  QueryStats stats;
  for (uint32_t i = 0; i < n; ++i) {
    double dot = 0, norm = 0;
    for (uint32_t c = 0; c < d; ++c) {
      dot += queries[i][c] * mean[c];
      norm += double(queries[i][c]) * queries[i][c];
    }
    stats.cosine.push_back(norm > 0 && mean_norm > 0 ? float(dot / (std::sqrt(norm) * mean_norm)) : 0.0f);
    std::vector<double> p(range.first + i + 1);
    for (uint32_t j = 0; j < p.size(); ++j) {
      double s = 0;
      for (uint32_t c = 0; c < d; ++c) s += double(queries[i][c]) * keys[j][c];
      p[j] = scale * s;
    }
    const double max = *std::max_element(p.begin(), p.end());
    double sum = 0;
    for (double& x : p) sum += (x = std::exp(x - max));
    std::sort(p.begin(), p.end(), std::greater<>());
    double acc = 0;
    uint32_t needed = 0;
    while (needed < p.size() && acc < 0.9 * sum) acc += p[needed++];
    stats.keys_for_90.push_back(needed);
  }
  stats.kept = kept_queries(stats.cosine, n_q);
  return stats;
}

}  // namespace kv::reference
