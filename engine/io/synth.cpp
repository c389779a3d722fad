#include "io/synth.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/error.h"
#include "base/random.h"

namespace kv {
namespace {

constexpr uint32_t kSinks = 4;
constexpr uint32_t kNeedles = 4;
constexpr double kRopeBase = 10000.0;

enum Stream : uint64_t { kDirections = 1, kKeys, kQueries, kValues, kNeedlePositions, kHeadMix };

using Vector = std::vector<double>;

// A random vector on the channels of the given RoPE frequency pairs, scaled to `norm`.
Vector random_on_pairs(Random& random, uint32_t dim, uint32_t first_pair, uint32_t last_pair, double norm) {
  Vector v(dim, 0.0);
  double sum = 0;
  for (uint32_t p = first_pair; p < last_pair; ++p)
    for (uint32_t c : {p, p + dim / 2}) {
      v[c] = random.normal();
      sum += v[c] * v[c];
    }
  for (double& x : v) x *= norm / std::sqrt(sum);
  return v;
}

// Hugging Face rotate_half RoPE: channel pairs (i, i + d/2) turn by position * base^(-2i/d).
void apply_rope(std::span<float> row, uint32_t position, const std::vector<double>& frequencies) {
  const size_t half = row.size() / 2;
  for (size_t i = 0; i < half; ++i) {
    double angle = position * frequencies[i];
    double c = std::cos(angle), s = std::sin(angle);
    double x = row[i], y = row[i + half];
    row[i] = float(x * c - y * s);
    row[i + half] = float(y * c + x * s);
  }
}

struct KvHeadStructure {
  Vector sink;                    // low-frequency: position-invariant after RoPE
  Vector recency;                 // high-frequency: RoPE turns it into a decay with distance
  std::vector<Vector> needles;    // low-frequency
  std::vector<uint32_t> needle_positions;
};

std::vector<uint32_t> needle_positions(const SynthOptions& o, uint32_t layer, uint32_t g) {
  Random random(substream(o.seed, kNeedlePositions, layer, g));
  std::vector<uint32_t> positions;
  if (o.tokens < 16) return positions;
  for (uint32_t n = 0; n < kNeedles; ++n)
    positions.push_back(o.tokens / 8 + uint32_t(random.below(std::max<uint32_t>(1, o.tokens * 5 / 8))));
  return positions;
}

KvHeadStructure head_structure(const SynthOptions& o, uint32_t layer, uint32_t g) {
  Random random(substream(o.seed, kDirections, layer, g));
  const uint32_t half = o.dim / 2;
  const uint32_t low_first = half - std::max<uint32_t>(1, half / 4);  // slowest quarter of the pairs
  const uint32_t high_last = std::max<uint32_t>(1, half / 2);         // fastest half of the pairs
  const double root_d = std::sqrt(double(o.dim));
  KvHeadStructure s;
  s.sink = random_on_pairs(random, o.dim, low_first, half, 1.0);
  s.recency = random_on_pairs(random, o.dim, 0, high_last, std::sqrt(4.0 * root_d));
  for (uint32_t n = 0; n < kNeedles; ++n) s.needles.push_back(random_on_pairs(random, o.dim, low_first, half, 1.0));
  s.needle_positions = needle_positions(o, layer, g);
  return s;
}

}  // namespace

std::vector<uint32_t> synthetic_needles(const SynthOptions& options, uint32_t layer, uint32_t kv_head) {
  return needle_positions(options, layer, kv_head);
}

void write_synthetic_capture(const std::filesystem::path& path, const SynthOptions& o) {
  if (o.heads == 0 || o.kv_heads == 0 || o.heads % o.kv_heads != 0)
    throw InputError("the query heads must be a positive multiple of the KV heads", "heads");
  if (o.dim < 8 || o.dim % 8 != 0) throw InputError("the head dimension must be a positive multiple of 8", "dim");
  if (o.tokens == 0) throw InputError("a capture needs at least one token", "tokens");
  if (o.layers == 0) throw InputError("a capture needs at least one layer", "layers");
  if (uint64_t(o.heads) * o.tokens * o.dim > (uint64_t(1) << 32))
    throw InputError("H x T x d exceeds 2^32 values per tensor", "tokens");

  const uint32_t r = o.heads / o.kv_heads;
  const double root_d = std::sqrt(double(o.dim));
  std::vector<double> frequencies(o.dim / 2);
  for (uint32_t i = 0; i < o.dim / 2; ++i) frequencies[i] = std::pow(kRopeBase, -2.0 * i / o.dim);

  struct LayerBytes {
    std::vector<std::byte> q, k, v;
  };
  std::vector<LayerBytes> bytes(o.layers);
  CaptureData capture;
  capture.model = "synthetic";
  capture.source = "kvscope synth --heads " + std::to_string(o.heads) + " --kv-heads " + std::to_string(o.kv_heads) +
                   " --dim " + std::to_string(o.dim) + " --tokens " + std::to_string(o.tokens) + " --layers " +
                   std::to_string(o.layers) + " --seed " + std::to_string(o.seed) + " --dtype " + dtype_name(o.dtype);

  std::vector<float> row(o.dim);
  for (uint32_t layer = 0; layer < o.layers; ++layer) {
    std::vector<float> q(size_t(o.heads) * o.tokens * o.dim), k(size_t(o.kv_heads) * o.tokens * o.dim),
        v(size_t(o.kv_heads) * o.tokens * o.dim);
    // Two outlier key channels among the slow pairs: large, nearly constant after RoPE.
    Random outlier_random(substream(o.seed, kDirections, layer, 1u << 20));
    const uint32_t outlier = o.dim / 2 - 1 - uint32_t(outlier_random.below(std::max<uint32_t>(1, o.dim / 8)));

    for (uint32_t g = 0; g < o.kv_heads; ++g) {
      KvHeadStructure s = head_structure(o, layer, g);
      Random key_random(substream(o.seed, kKeys, layer, g)), value_random(substream(o.seed, kValues, layer, g));
      for (uint32_t j = 0; j < o.tokens; ++j) {
        double sink = j < kSinks ? 1.5 * root_d : 0.0;
        int needle = -1;
        for (uint32_t n = 0; n < s.needle_positions.size(); ++n)
          if (s.needle_positions[n] == j) needle = int(n);
        for (uint32_t c = 0; c < o.dim; ++c) {
          double x = key_random.normal() + sink * s.sink[c] + s.recency[c];
          if (needle >= 0) x += root_d * s.needles[size_t(needle)][c];
          if (c == outlier || c == outlier + o.dim / 2) x += 6.0;
          row[c] = float(x);
        }
        apply_rope(row, j, frequencies);
        std::copy(row.begin(), row.end(), k.begin() + (size_t(g) * o.tokens + j) * o.dim);
        for (uint32_t c = 0; c < o.dim; ++c) v[(size_t(g) * o.tokens + j) * o.dim + c] = float(value_random.normal());
      }
      for (uint32_t hi = 0; hi < r; ++hi) {
        const uint32_t h = g * r + hi;
        Random mix(substream(o.seed, kHeadMix, layer, h));
        const double sink_weight = 2.0 + 4.0 * mix.uniform();      // heads lean on the sinks differently
        const double recency_weight = 0.5 + 1.0 * mix.uniform();
        const double needle_weight = 6.0 + 4.0 * mix.uniform();
        Random query_random(substream(o.seed, kQueries, layer, h));
        for (uint32_t i = 0; i < o.tokens; ++i) {
          // Late queries look for one needle that lies in their past.
          int needle = -1;
          if (!s.needle_positions.empty() && i >= o.tokens * 3 / 4) {
            uint32_t n = uint32_t((i * 2654435761u + h) % s.needle_positions.size());
            if (s.needle_positions[n] < i) needle = int(n);
          }
          for (uint32_t c = 0; c < o.dim; ++c) {
            double x = query_random.normal() + sink_weight * s.sink[c] + recency_weight * s.recency[c];
            if (needle >= 0) x += needle_weight * s.needles[size_t(needle)][c];
            row[c] = float(x);
          }
          apply_rope(row, i, frequencies);
          std::copy(row.begin(), row.end(), q.begin() + (size_t(h) * o.tokens + i) * o.dim);
        }
      }
    }
    bytes[layer] = {from_float(o.dtype, q), from_float(o.dtype, k), from_float(o.dtype, v)};
    capture.layers.push_back({int(layer), {o.heads, o.kv_heads, o.tokens, o.dim}, o.dtype, bytes[layer].q, bytes[layer].k, bytes[layer].v});
  }

  // Readable stand-in text: sinks, needles and filler words, one per token.
  static const char* const kWords[] = {" the", " of", " and", " a", " to", " in", " is", " that", " it", " was",
                                       " for", " on", " with", " as", " at", " by", " this", " from", " or", " an"};
  std::vector<uint32_t> needles = needle_positions(o, 0, 0);
  if (!needles.empty()) capture.needle_span = std::make_pair(needles[0], needles[0] + 1);  // NEEDLE0 of layer 0, KV head 0
  for (uint32_t i = 0; i < o.tokens; ++i) {
    capture.token_ids.push_back(int32_t(i % 32000));
    std::string text = i < kSinks ? "<s>" : kWords[(i * 7919u) % 20];
    for (uint32_t n = 0; n < needles.size(); ++n)
      if (needles[n] == i) text = " NEEDLE" + std::to_string(n);
    capture.token_text.push_back(text);
  }
  write_capture(path, capture);
}

}  // namespace kv
