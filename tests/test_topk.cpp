// topk.comp against a stable sort: exact, ties toward the lower index, ascending, -1 padded.
#include <algorithm>
#include <numeric>
#include <random>

#include "test_device.h"
#include "topk.h"

namespace kv {
namespace {

std::vector<int32_t> expected_top_k(const std::vector<float>& row, uint32_t k, uint32_t width) {
  std::vector<int32_t> order(row.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
  order.resize(std::min<size_t>(k, row.size()));
  std::sort(order.begin(), order.end());
  order.resize(width, -1);
  return order;
}

struct TopKCase {
  uint32_t rows, n, k;
  int distinct;  // 0: continuous values; else this many distinct values (many ties)
};

class TopKTest : public test::GpuTest, public ::testing::WithParamInterface<TopKCase> {};

TEST_P(TopKTest, MatchesStableSort) {
  const TopKCase& c = GetParam();
  vk::Device& device = test::device();
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> level(0, std::max(0, c.distinct - 1));
  const uint32_t stride = c.n + 3, width = c.k + 2;
  std::vector<float> scores(size_t(c.rows) * stride);
  for (float& s : scores) s = c.distinct ? float(level(rng)) - c.distinct / 2 : normal(rng);
  for (uint32_t r = 0; r < c.rows && c.n > 2; ++r) {  // signed zeros and extremes
    scores[size_t(r) * stride] = -0.0f;
    scores[size_t(r) * stride + 1] = 0.0f;
  }
  vk::Buffer score_buffer(device, scores.size() * 4), indices(device, size_t(c.rows) * width * 4);
  score_buffer.upload_values<float>(scores);
  indices.fill(0x7fc00000u);
  TopK topk(device);
  vk::Pass pass(device);
  topk.record(pass, score_buffer, c.rows, c.n, stride, c.k, indices, width);
  pass.run();
  std::vector<int32_t> got = indices.download_values<int32_t>(size_t(c.rows) * width);
  for (uint32_t r = 0; r < c.rows; ++r) {
    std::vector<float> row(scores.begin() + size_t(r) * stride, scores.begin() + size_t(r) * stride + c.n);
    std::vector<int32_t> want = expected_top_k(row, c.k, width);
    std::vector<int32_t> row_got(got.begin() + size_t(r) * width, got.begin() + size_t(r + 1) * width);
    auto [first_got, first_want] = std::mismatch(row_got.begin(), row_got.end(), want.begin());
    ASSERT_TRUE(first_got == row_got.end())
        << "row " << r << ": slot " << (first_got - row_got.begin()) << " holds " << *first_got
        << ", expected " << *first_want;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, TopKTest,
                         ::testing::Values(TopKCase{4, 1000, 10, 0}, TopKCase{3, 1000, 100, 5},  // heavy ties
                                           TopKCase{2, 777, 777, 0},                            // k = n
                                           TopKCase{2, 100, 300, 0},                            // k > n
                                           TopKCase{2, 1, 1, 0}, TopKCase{1, 5000, 4096, 3},
                                           TopKCase{1, 262144, 8192, 0},  // the largest the issue asks for
                                           TopKCase{2, 70000, 100, 0},
                                           TopKCase{2, 300, 0, 0}, TopKCase{2, 0, 16, 0}),
                         [](const auto& info) {
                           const TopKCase& c = info.param;
                           return "n" + std::to_string(c.n) + "_k" + std::to_string(c.k) + "_ties" + std::to_string(c.distinct);
                         });

}  // namespace
}  // namespace kv
