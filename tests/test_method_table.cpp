// The table of methods (methods/table.h) is what the CLI, the viewer, bench
// and the reference dispatch read: every row must give each of them what it needs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "eval/bench.h"
#include "methods/table.h"
#include "reference/selection.h"
#include "test_device.h"

namespace kv {
namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(MethodTable, EveryMethodIsComplete) {
  std::set<std::string> names;
  const std::vector<std::string> steps = bench_step_names();
  for (const MethodSpec& m : method_table()) {
    SCOPED_TRACE(m.name);
    EXPECT_TRUE(names.insert(m.name).second) << "listed twice";
    EXPECT_TRUE(reference::has_reference(m.name)) << "no float64 reference in reference/selection.cpp";
    EXPECT_GT(std::strlen(m.summary), 10u) << "no help line";
    EXPECT_NE(m.make, nullptr);
    EXPECT_NE(m.granularity, nullptr);
    EXPECT_NE(m.stage_bytes, nullptr);
    for (const char* flag : m.options) EXPECT_NO_THROW(find_option(flag)) << "--" << flag << " is not in option_table()";
    for (Mode mode : m.bench_regimes) EXPECT_TRUE(contains(steps, std::string(m.name) + " " + mode_name(mode)));
    // The oracle is the reference every method is measured against, and
    // StreamingLLM reads nothing, so neither is timed; every other method is.
    if (std::string(m.name) != "oracle" && std::string(m.name) != "streaming") {
      EXPECT_FALSE(m.bench_regimes.empty()) << "no bench step";
    }
  }
}

TEST(MethodTable, EveryOptionHasItsControls) {
  std::set<std::string> read_by_some_method;
  for (const MethodSpec& m : method_table())
    for (const char* flag : m.options) read_by_some_method.insert(flag);
  const MethodOptions defaults;
  for (const OptionSpec& o : option_table()) {
    SCOPED_TRACE(o.flag);
    EXPECT_TRUE(read_by_some_method.count(o.flag)) << "no method lists it";
    EXPECT_GT(std::strlen(o.help), 5u) << "no help line";
    ASSERT_NE(o.get, nullptr);
    ASSERT_NE(o.set, nullptr);
    // The default is accepted, and lies in the viewer's range (highest 0: the head dimension).
    const uint32_t value = o.get(defaults);
    EXPECT_GE(value, o.lowest);
    EXPECT_LE(value, o.highest);
    EXPECT_GE(value, o.viewer_lowest);
    if (o.viewer_highest) {
      EXPECT_LE(value, o.viewer_highest);
    }
    EXPECT_GE(o.viewer_lowest, o.lowest);
    if (!o.names.empty()) {
      EXPECT_EQ(o.highest + 1, o.names.size());
    }
    // Its spelling parses back to the same value.
    MethodOptions parsed;
    o.parse(parsed, o.text(defaults));
    EXPECT_EQ(parsed.key(), defaults.key());
  }
}

// A field the key leaves out would let a cache return a method built with other options.
TEST(MethodTable, EveryOptionChangesTheKey) {
  const MethodOptions defaults;
  for (const OptionSpec& o : option_table()) {
    SCOPED_TRACE(o.flag);
    MethodOptions changed = defaults;
    const uint32_t value = o.get(defaults);
    o.set(changed, value + 1 <= o.highest ? value + 1 : value - 1);
    EXPECT_NE(changed.key(), defaults.key());
    EXPECT_NE(o.get(changed), value);
  }
}

TEST(MethodTable, BadOptionValuesAreRefused) {
  MethodOptions options;
  EXPECT_THROW(find_option("page-size").parse(options, "0"), InputError);
  EXPECT_THROW(find_option("page-size").parse(options, "12x"), InputError);
  EXPECT_THROW(find_option("page-size").parse(options, "99999999999999"), InputError);
  EXPECT_THROW(find_option("snap-pool").parse(options, "4"), InputError);
  EXPECT_THROW(find_option("gqa-agg").parse(options, "median"), InputError);
  EXPECT_THROW(find_option("no-such-option"), InputError);
  EXPECT_THROW(find_method("no-such-method"), InputError);
  find_option("gqa-agg").parse(options, "mean");
  EXPECT_EQ(options.gqa_agg, HeadAggregate::mean);
}

// What a built method says of its rows is what its row of the table says.
class MethodTableGpu : public test::GpuTest {};

TEST_F(MethodTableGpu, BuiltMethodsHaveTheTablesGranularity) {
  const AttentionShape shape{4, 2, 256, 64};
  std::vector<std::byte> values(size_t(shape.kv_heads) * shape.tokens * shape.dim * 2);
  for (size_t i = 0; i < values.size() / 2; ++i) {  // small distinct values: Loki's basis needs some spread
    const uint16_t h = float_to_half(float(int(i % 17) - 8) / 16.0f);
    std::memcpy(&values[2 * i], &h, 2);
  }
  GpuLayer layer(test::device(), shape, DType::f16, 0.125, values, values);
  const std::vector<std::byte> queries(size_t(shape.heads) * shape.tokens * shape.dim * 2, std::byte{0});
  layer.host_queries = queries;
  for (const MethodSpec& m : method_table())
    for (Mode mode : {Mode::decode, Mode::prefill})
      for (HeadAggregate aggregate : {HeadAggregate::head, HeadAggregate::max}) {
        const bool aggregates = std::any_of(m.options.begin(), m.options.end(), [](const char* f) { return std::string(f) == "gqa-agg"; });
        if (aggregate != HeadAggregate::head && !aggregates) continue;
        SCOPED_TRACE(std::string(m.name) + " " + mode_name(mode));
        MethodOptions options;
        options.gqa_agg = aggregate;
        const auto method = make_method(test::device(), layer, m.name, options, mode, mode == Mode::decode ? 1 : 64);
        EXPECT_EQ(method->granularity(), m.granularity(options, mode));
        EXPECT_EQ(method->name(), m.name);
      }
}

}  // namespace
}  // namespace kv
