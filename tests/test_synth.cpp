// The synthetic capture: deterministic for a seed, and its attention has the
// advertised structure (sinks, recency, needles that late queries find).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "io/capture.h"
#include "io/synth.h"
#include "temp_files.h"

namespace kv {
namespace {

namespace fs = std::filesystem;
using test::temp_path;

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(Synth, SameSeedSameBytesOtherSeedOtherBytes) {
  SynthOptions o;
  o.heads = 4;
  o.kv_heads = 2;
  o.dim = 32;
  o.tokens = 200;
  o.layers = 2;
  write_synthetic_capture(temp_path("a.safetensors"), o);
  write_synthetic_capture(temp_path("b.safetensors"), o);
  o.seed = 1;
  write_synthetic_capture(temp_path("c.safetensors"), o);
  EXPECT_EQ(file_bytes(temp_path("a.safetensors")), file_bytes(temp_path("b.safetensors")));
  EXPECT_NE(file_bytes(temp_path("a.safetensors")), file_bytes(temp_path("c.safetensors")));
  Capture capture(temp_path("a.safetensors"));
  EXPECT_EQ(capture.layers().size(), 2u);
  EXPECT_EQ(capture.model(), "synthetic");
  EXPECT_EQ(capture.token_text(0), "<s>");
}

TEST(Synth, AttentionHasSinksRecencyAndNeedles) {
  SynthOptions o;
  o.heads = 8;
  o.kv_heads = 2;
  o.dim = 64;
  o.tokens = 1024;
  write_synthetic_capture(temp_path("structure.safetensors"), o);
  Capture capture(temp_path("structure.safetensors"));
  const CaptureLayer& layer = capture.layer(0);
  std::vector<float> q = to_float(layer.dtype, layer.q->data), k = to_float(layer.dtype, layer.k->data);
  const double scale = capture.scale(layer);
  const uint32_t T = o.tokens, d = o.dim;

  double sink_mass = 0, recent_mass = 0, needle_mass = 0;
  int rows = 0;
  for (uint32_t h = 0; h < o.heads; ++h) {
    const uint32_t g = h / (o.heads / o.kv_heads);
    const std::vector<uint32_t> needles = synthetic_needles(o, 0, g);
    for (uint32_t t = T - 64; t < T; ++t) {
      std::vector<double> p(t + 1);
      for (uint32_t j = 0; j <= t; ++j) {
        double dot = 0;
        for (uint32_t c = 0; c < d; ++c) dot += double(q[(size_t(h) * T + t) * d + c]) * k[(size_t(g) * T + j) * d + c];
        p[j] = scale * dot;
      }
      double max = *std::max_element(p.begin(), p.end()), sum = 0;
      for (double& x : p) sum += (x = std::exp(x - max));
      for (double& x : p) x /= sum;
      for (uint32_t j = 0; j < 4; ++j) sink_mass += p[j];
      for (uint32_t j = t - 31; j <= t; ++j) recent_mass += p[j];
      for (uint32_t n : needles) needle_mass += p[n];
      ++rows;
    }
  }
  // Uniform attention would give 4/T, 32/T and 4/T.
  EXPECT_GT(sink_mass / rows, 0.05);
  EXPECT_GT(recent_mass / rows, 0.05);
  EXPECT_GT(needle_mass / rows, 0.1);
}

}  // namespace
}  // namespace kv
