#include "methods/pca.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kv {

std::vector<double> principal_components(std::span<const float> keys, uint32_t tokens, uint32_t d, uint32_t rank) {
  std::vector<double> mean(d, 0.0), a(size_t(d) * d, 0.0), v(size_t(d) * d, 0.0);
  for (uint32_t j = 0; j < tokens; ++j)
    for (uint32_t c = 0; c < d; ++c) mean[c] += keys[size_t(j) * d + c] / double(tokens);
  for (uint32_t j = 0; j < tokens; ++j)
    for (uint32_t x = 0; x < d; ++x) {
      const double dx = keys[size_t(j) * d + x] - mean[x];
      for (uint32_t y = x; y < d; ++y) a[size_t(x) * d + y] += dx * (keys[size_t(j) * d + y] - mean[y]) / tokens;
    }
  for (uint32_t x = 0; x < d; ++x) {
    for (uint32_t y = 0; y < x; ++y) a[size_t(x) * d + y] = a[size_t(y) * d + x];
    v[size_t(x) * d + x] = 1.0;
  }
  // Cyclic Jacobi: rotate away every off-diagonal element until they vanish.
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0, diagonal = 0;
    for (uint32_t x = 0; x < d; ++x)
      for (uint32_t y = 0; y < d; ++y) (x == y ? diagonal : off) += a[size_t(x) * d + y] * a[size_t(x) * d + y];
    if (off <= 1e-24 * std::max(diagonal, 1e-300)) break;
    for (uint32_t p = 0; p + 1 < d; ++p)
      for (uint32_t q = p + 1; q < d; ++q) {
        const double apq = a[size_t(p) * d + q];
        if (std::abs(apq) < 1e-300) continue;
        const double theta = (a[size_t(q) * d + q] - a[size_t(p) * d + p]) / (2 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double cs = 1 / std::sqrt(t * t + 1), sn = t * cs;
        for (uint32_t k = 0; k < d; ++k) {  // columns p, q
          const double akp = a[size_t(k) * d + p], akq = a[size_t(k) * d + q];
          a[size_t(k) * d + p] = cs * akp - sn * akq;
          a[size_t(k) * d + q] = sn * akp + cs * akq;
        }
        for (uint32_t k = 0; k < d; ++k) {  // rows p, q
          const double apk = a[size_t(p) * d + k], aqk = a[size_t(q) * d + k];
          a[size_t(p) * d + k] = cs * apk - sn * aqk;
          a[size_t(q) * d + k] = sn * apk + cs * aqk;
        }
        for (uint32_t k = 0; k < d; ++k) {  // eigenvectors are v's columns
          const double vkp = v[size_t(k) * d + p], vkq = v[size_t(k) * d + q];
          v[size_t(k) * d + p] = cs * vkp - sn * vkq;
          v[size_t(k) * d + q] = sn * vkp + cs * vkq;
        }
      }
  }
  std::vector<uint32_t> order(d);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t x, uint32_t y) { return a[size_t(x) * d + x] > a[size_t(y) * d + y]; });
  std::vector<double> basis(size_t(std::min(rank, d)) * d);
  for (uint32_t c = 0; c < std::min(rank, d); ++c)
    for (uint32_t k = 0; k < d; ++k) basis[size_t(c) * d + k] = v[size_t(k) * d + order[c]];
  return basis;
}

}  // namespace kv
