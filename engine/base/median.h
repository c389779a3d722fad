#pragma once
#include <algorithm>
#include <vector>

namespace kv {

// The median of timed runs (the mean of the middle two for an even count; 0
// for none): what every timing kvscope reports is reduced to.
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n == 0 ? 0 : n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace kv
