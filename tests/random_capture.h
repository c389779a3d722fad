#pragma once
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "io/capture.h"
#include "temp_files.h"

namespace kv::test {

// A fresh seed for a test's random inputs, or KVSCOPE_TEST_SEED=N to replay
// the input of a failure that printed seed N.
inline uint32_t test_seed() {
  const char* fixed = std::getenv("KVSCOPE_TEST_SEED");
  return fixed ? uint32_t(std::strtoul(fixed, nullptr, 10)) : std::random_device{}();
}

// A one-layer capture of fresh Gaussian values. Its source metadata names the
// seed ("test, seed N"): a test prints it on failure.
inline std::filesystem::path random_capture(const std::string& name, const AttentionShape& s, DType dtype) {
  const uint32_t seed = test_seed();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  std::vector<float> q(size_t(s.heads) * s.tokens * s.dim), k(size_t(s.kv_heads) * s.tokens * s.dim), v(k.size());
  for (auto* t : {&q, &k, &v})
    for (float& x : *t) x = normal(rng);
  std::vector<std::byte> qb = from_float(dtype, q), kb = from_float(dtype, k), vb = from_float(dtype, v);
  CaptureData data;
  data.model = "random";
  data.source = "test, seed " + std::to_string(seed);
  data.layers.push_back({0, s, dtype, qb, kb, vb});
  std::filesystem::path path = temp_path(name + ".safetensors");
  write_capture(path, data);
  return path;
}

}  // namespace kv::test
