#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace kv {

// Loki's basis for one KV head: the `rank` principal components of its keys
// (rows of d floats [T, d]), i.e. the eigenvectors of their covariance with the
// largest eigenvalues (ties toward the lower index), as [rank, d] float64.
// Cyclic Jacobi in float64; an eigenvector's sign is arbitrary and cancels in
// Loki's scores (q.u)(k.u).
std::vector<double> principal_components(std::span<const float> keys, uint32_t tokens, uint32_t dim, uint32_t rank);

}  // namespace kv
