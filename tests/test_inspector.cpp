// The viewer's engine calls: the cosine panel's query statistics against their
// float64 reference, and recall-curve points against eval over the same blocks.
#include <algorithm>
#include <cmath>

#include "eval/evaluator.h"
#include "eval/inspector.h"
#include "random_capture.h"
#include "reference/query_stats.h"
#include "test_device.h"

namespace kv {
namespace {

struct StatsCase {
  Mode mode;
  DType dtype;
};

class QueryStatsTest : public test::GpuTest, public ::testing::WithParamInterface<StatsCase> {};

TEST_P(QueryStatsTest, MatchesReference) {
  const StatsCase& c = GetParam();
  const AttentionShape shape{4, 2, 300, 64};
  const uint32_t chunk = 48, n_q = 8;
  Capture capture(test::random_capture(std::string("stats_") + mode_name(c.mode) + dtype_name(c.dtype), shape, c.dtype));
  Inspector inspector(test::device(), capture, 0, c.mode, chunk);
  const std::vector<Block> blocks = blocks_with_candidates(c.mode, shape.tokens, 8, chunk);
  for (const Block& block : {blocks.front(), blocks.back()}) {
    for (uint32_t head : {0u, 3u}) {
      const QueryStats gpu = inspector.query_stats(head, block, n_q);
      const QueryStats expected = reference::query_stats(capture, 0, head, block, chunk, n_q);
      ASSERT_EQ(gpu.cosine.size(), expected.cosine.size());
      ASSERT_EQ(gpu.keys_for_90.size(), expected.keys_for_90.size());
      for (size_t i = 0; i < expected.cosine.size(); ++i) {
        EXPECT_NEAR(gpu.cosine[i], expected.cosine[i], 1e-4) << "query " << i;
        // float32 probabilities against float64: a key at the 90% boundary may count either way.
        const double slack = 1.0 + 0.005 * expected.keys_for_90[i];
        EXPECT_LE(std::abs(double(gpu.keys_for_90[i]) - expected.keys_for_90[i]), slack)
            << "query " << i << " at block " << block.first_query;
        EXPECT_GE(gpu.keys_for_90[i], 1u);
      }
      EXPECT_EQ(size_t(std::count(gpu.kept.begin(), gpu.kept.end(), true)),
                std::min<size_t>(gpu.cosine.size(), n_q));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Inspector, QueryStatsTest,
                         ::testing::Values(StatsCase{Mode::decode, DType::f16}, StatsCase{Mode::prefill, DType::f16},
                                           StatsCase{Mode::prefill, DType::bf16}, StatsCase{Mode::decode, DType::f32}),
                         [](const ::testing::TestParamInfo<StatsCase>& info) {
                           return std::string(mode_name(info.param.mode)) + "_" + dtype_name(info.param.dtype);
                         });

class CurvePointTest : public test::GpuTest, public ::testing::WithParamInterface<Mode> {};

TEST_P(CurvePointTest, MatchesEvalOverTheSameBlocks) {
  const Mode mode = GetParam();
  const AttentionShape shape{4, 2, 400, 64};
  const uint32_t chunk = 32;
  Capture capture(test::random_capture(std::string("curves_") + mode_name(mode), shape, DType::f16));
  Inspector inspector(test::device(), capture, 0, mode, chunk);
  EvalConfig config;
  config.mode = mode;
  config.probes = 4;
  config.chunk = chunk;
  config.last_chunks = mode == Mode::prefill ? 2 : 0;
  config.methods = {"oracle", "quoka", "quest"};
  config.budgets = {16, 64};
  const std::vector<EvalRow> rows = evaluate_layer(test::device(), capture, capture.layer(0), config);
  const std::vector<Block> blocks = inspector.curve_blocks();
  ASSERT_EQ(blocks.size(), rows.front().block_positions.size());
  for (const EvalRow& row : rows) {
    const MetricTriple point = inspector.curve_point(blocks, row.method, config.options, row.budget);
    EXPECT_NEAR(point.coverage, row.mean.coverage, 1e-6) << row.method << " k=" << row.budget;
    EXPECT_NEAR(point.recall, row.mean.recall, 1e-6) << row.method << " k=" << row.budget;
    EXPECT_NEAR(point.output_error, row.mean.output_error, 1e-6) << row.method << " k=" << row.budget;
  }
}

INSTANTIATE_TEST_SUITE_P(Inspector, CurvePointTest, ::testing::Values(Mode::decode, Mode::prefill),
                         [](const ::testing::TestParamInfo<Mode>& info) { return std::string(mode_name(info.param)); });

}  // namespace
}  // namespace kv
