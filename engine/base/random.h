#pragma once
#include <cmath>
#include <cstdint>

namespace kv {

// splitmix64 with Box-Muller: the same stream on every platform and standard
// library (std::normal_distribution is not), so seeds reproduce exactly.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  uint64_t below(uint64_t n) { return next() % n; }
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u = 1.0 - uniform(), v = uniform();
    double radius = std::sqrt(-2.0 * std::log(u));
    spare_ = radius * std::sin(2.0 * M_PI * v);
    has_spare_ = true;
    return radius * std::cos(2.0 * M_PI * v);
  }

 private:
  uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

// A seed for one sub-stream, so each (layer, head, kind) is independent of the others' sizes.
inline uint64_t substream(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
  Random r(seed ^ (a * 0x100000001b3ull) ^ (b * 0xc2b2ae3d27d4eb4full) ^ (c * 0x165667b19e3779f9ull));
  return r.next();
}

}  // namespace kv
