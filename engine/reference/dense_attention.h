#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "io/capture.h"

namespace kv::reference {

// Float64 dense causal attention, the reference every kernel is tested
// against. q [H, n, d] holds the queries at `positions`; k, v [G, T, d]. Query
// i of head h attends to keys [0, positions[i]] of KV head h / (H/G).
struct DenseResult {
  std::vector<double> output;       // [H, n, d]
  std::vector<double> log_sum_exp;  // [H, n], natural log of sum_j exp(scale q.k_j)
};

DenseResult dense_attention(const AttentionShape& shape, double scale, std::span<const float> q,
                            std::span<const float> k, std::span<const float> v, std::span<const uint32_t> positions);

// The same over any keys (sparse attention): q [H, n, d]; query i of head h
// attends to the positions keys(h, i) of KV head h / (H/G).
DenseResult attention_over_keys(const AttentionShape& shape, double scale, std::span<const float> q, std::span<const float> k,
                                std::span<const float> v, size_t n,
                                const std::function<std::vector<uint32_t>(uint32_t head, size_t query)>& keys);

}  // namespace kv::reference
