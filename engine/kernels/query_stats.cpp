#include "kernels/query_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>


namespace kv {

QueryRange query_stats_range(const Block& block, uint32_t chunk) {
  const uint32_t last = block.first_query + block.n_queries;
  return {block.mode == Mode::prefill ? block.first_query : last - std::min(last, chunk), last};
}

std::vector<bool> kept_queries(const std::vector<float>& cosine, uint32_t n_q) {
  const size_t n = cosine.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return cosine[a] < cosine[b]; });
  std::vector<bool> kept(n, n <= n_q);
  for (size_t r = 0; r < std::min<size_t>(n, n_q); ++r) kept[order[r]] = true;
  return kept;
}

}  // namespace kv
