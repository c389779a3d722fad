#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "capture.h"

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

}  // namespace kv::reference
