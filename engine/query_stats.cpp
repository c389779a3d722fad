#include "query_stats.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace kv {

QueryStats chunk_query_stats(const Capture& capture, int layer_index, uint32_t head, const Block& block,
                             uint32_t chunk, uint32_t n_q) {
  const uint32_t last = block.first_query + block.n_queries;
  const uint32_t first = block.mode == Mode::prefill ? block.first_query : last - std::min(last, chunk);
  const CaptureLayer& layer = capture.layer(layer_index);
  const uint32_t d = layer.shape.dim, T = layer.shape.tokens, g = head / layer.shape.group();
  const size_t row_bytes = size_t(d) * dtype_size(layer.dtype);
  auto row = [&](const TensorView* t, uint32_t h, uint32_t position) {
    return to_float(layer.dtype, t->data.subspan((size_t(h) * T + position) * row_bytes, row_bytes));
  };
  const uint32_t n = last - first;
  std::vector<std::vector<float>> queries;
  std::vector<double> mean(d, 0.0);
  for (uint32_t i = first; i < last; ++i) {
    queries.push_back(row(layer.q, head, i));
    for (uint32_t c = 0; c < d; ++c) mean[c] += queries.back()[c] / n;
  }
  std::vector<std::vector<float>> keys;
  for (uint32_t j = 0; j < last; ++j) keys.push_back(row(layer.k, g, j));
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
    std::vector<double> p(first + i + 1);
    for (uint32_t j = 0; j < p.size(); ++j) {
      float s = 0;
      for (uint32_t c = 0; c < d; ++c) s += queries[i][c] * keys[j][c];
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
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return stats.cosine[a] < stats.cosine[b]; });
  stats.kept.assign(n, n <= n_q);
  for (uint32_t r = 0; r < std::min(n, n_q); ++r) stats.kept[order[r]] = true;
  return stats;
}

}  // namespace kv
