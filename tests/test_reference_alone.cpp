// The float64 references on their own: this program links kvscope_reference
// and nothing of the GPU engine (no Vulkan, no kernels), so it stops building
// the day a reference reaches for GPU code. Its checks are facts a reader can
// work out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "reference/dense_attention.h"
#include "reference/selection.h"

namespace kv {
namespace {

// One query head, one KV head, d = 2: a query that scores key 1 higher by
// a (about ln 3, as a float holds it) gives key 1 e^a times key 0's weight.
TEST(ReferenceAlone, DenseAttentionWeighsKeysBySoftmax) {
  const AttentionShape shape{1, 1, 2, 2};
  const float a = float(std::log(3.0));
  const std::vector<float> q{a, 0}, k{0, 0, 1, 0}, v{1, 0, 0, 1};
  const std::vector<uint32_t> positions{1};
  const reference::DenseResult r = reference::dense_attention(shape, 1.0, q, k, v, positions);
  ASSERT_EQ(r.output.size(), 2u);
  const double e = std::exp(double(a));
  EXPECT_NEAR(r.output[0], 1 / (1 + e), 1e-12);
  EXPECT_NEAR(r.output[1], e / (1 + e), 1e-12);
  EXPECT_NEAR(r.log_sum_exp[0], std::log(1 + e), 1e-12);
}

// StreamingLLM keeps the first n_sink keys and the most recent ones.
TEST(ReferenceAlone, StreamingKeepsSinksAndRecentKeys) {
  reference::HostLayer layer;
  layer.shape = {2, 1, 20, 4};
  layer.scale = 0.5;
  layer.q.assign(2 * 20 * 4, 1.0f);
  layer.k.assign(20 * 4, 1.0f);
  layer.v.assign(20 * 4, 1.0f);
  MethodOptions options;
  options.n_sink = 2;
  const reference::Selection s = reference::select("streaming", options, layer, {Mode::decode, 19, 1}, 6);
  ASSERT_EQ(s.size(), 1u);  // a row per KV head
  EXPECT_EQ(s[0], (std::vector<int32_t>{0, 1, 16, 17, 18, 19}));
}

}  // namespace
}  // namespace kv
