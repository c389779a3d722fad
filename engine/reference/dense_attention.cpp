#include "reference/dense_attention.h"

#include <algorithm>
#include <cmath>

namespace kv::reference {

DenseResult attention_over_keys(const AttentionShape& shape, double scale, std::span<const float> q, std::span<const float> k,
                                std::span<const float> v, size_t n,
                                const std::function<std::vector<uint32_t>(uint32_t head, size_t query)>& keys_of) {
  const size_t d = shape.dim;
  DenseResult result;
  result.output.assign(shape.heads * n * d, 0.0);
  result.log_sum_exp.assign(shape.heads * n, 0.0);
  std::vector<double> logits;
  for (uint32_t h = 0; h < shape.heads; ++h) {
    const size_t g = h / shape.group();
    for (size_t i = 0; i < n; ++i) {
      const float* query = &q[(h * n + i) * d];
      const std::vector<uint32_t> keys = keys_of(h, i);
      logits.assign(keys.size(), 0.0);
      for (size_t j = 0; j < keys.size(); ++j) {
        const float* key = &k[(g * shape.tokens + keys[j]) * d];
        double dot = 0;
        for (size_t c = 0; c < d; ++c) dot += double(query[c]) * double(key[c]);
        logits[j] = scale * dot;
      }
      const double max = *std::max_element(logits.begin(), logits.end());
      double sum = 0;
      for (double& l : logits) sum += (l = std::exp(l - max));
      double* out = &result.output[(h * n + i) * d];
      for (size_t j = 0; j < keys.size(); ++j) {
        const float* value = &v[(g * shape.tokens + keys[j]) * d];
        for (size_t c = 0; c < d; ++c) out[c] += logits[j] / sum * double(value[c]);
      }
      result.log_sum_exp[h * n + i] = max + std::log(sum);
    }
  }
  return result;
}

DenseResult dense_attention(const AttentionShape& shape, double scale, std::span<const float> q,
                            std::span<const float> k, std::span<const float> v, std::span<const uint32_t> positions) {
  return attention_over_keys(shape, scale, q, k, v, positions.size(), [&](uint32_t, size_t i) {
    std::vector<uint32_t> keys(size_t(positions[i]) + 1);
    for (uint32_t j = 0; j < keys.size(); ++j) keys[j] = j;
    return keys;
  });
}

}  // namespace kv::reference
