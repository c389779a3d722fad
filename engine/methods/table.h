#pragma once
// The one table of selection methods: every front end (the CLI's parser and
// --help, the viewer's controls, bench's steps and byte model, the options key)
// and the tests read it. docs/adding-a-method.md walks through adding a row.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "method.h"

namespace kv {

// One method option: a field of MethodOptions, its flag and how far it goes.
struct OptionSpec {
  const char* flag;  // --FLAG on the CLI; the viewer's label; its name in bench's JSON (with '_')
  const char* help;  // one line: what it is, for which method
  uint32_t lowest = 0, highest = 0;  // values the CLI accepts (indices of `names` for named values)
  std::vector<const char*> names;    // named values (--quoka-group mean|max); empty: a count
  bool odd = false;                  // only odd values (a pooling kernel)
  uint32_t viewer_lowest = 0, viewer_highest = 0;  // the viewer's slider; viewer_highest 0: the head dimension
  uint32_t (*get)(const MethodOptions&) = nullptr;
  void (*set)(MethodOptions&, uint32_t) = nullptr;

  // The value as the CLI spells it: a number, or its name.
  std::string text(const MethodOptions& options) const;
  // Sets the option from its CLI spelling; InputError naming the flag when it is out of range.
  void parse(MethodOptions& options, const std::string& text) const;
};

// Every option of every method, in the order --help lists them.
const std::vector<OptionSpec>& option_table();
const OptionSpec& find_option(const std::string& flag);

// What a step of a method moves at least, for bench's GB/s column.
struct StageSizes {
  AttentionShape shape;
  double element = 2;  // bytes of one stored K/V/Q element
  uint32_t candidates = 0, queries = 1, budget = 0, list_rows = 0;
  MethodOptions options;
  double kv_row() const { return shape.dim * element; }
};

using MethodFactory = std::unique_ptr<Method> (*)(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode,
                                                  uint32_t max_queries);

struct Rgb {
  uint8_t r, g, b;
};

struct MethodSpec {
  const char* name;
  const char* summary;  // one line for --help
  MethodFactory make;
  // Rows of its selections: per query head or per KV head.
  Granularity (*granularity)(const MethodOptions&, Mode);
  std::vector<const char*> options;  // flags of option_table() rows that it reads
  // The regimes bench times it in ("NAME decode", "NAME prefill").
  std::vector<Mode> bench_regimes;
  // Reads past positions' queries (GpuLayer::host_queries), not only the block's.
  bool reads_past_queries = false;
  // Reads every past query (O(T^2)): bench times it only when named, the
  // viewer leaves it out of its curves on long captures.
  bool quadratic = false;
  // Builds from every key of the layer at once (Loki's basis): a model run,
  // whose cache fills as it goes, cannot run it.
  bool builds_from_whole_cache = false;
  // The least its own stages move, by stage name; a negative value for a
  // stage it leaves to bench's shared model (sparse attention, the top-k).
  double (*stage_bytes)(const std::string& stage, const StageSizes& sizes) = nullptr;
  Rgb color;  // in the viewer's charts
};

// Every method, in the order eval and the viewer list them.
const std::vector<MethodSpec>& method_table();
// The row of `name`; InputError listing the known methods when there is none.
const MethodSpec& find_method(const std::string& name);
bool is_method(const std::string& name);

// Builds a method for one layer and regime; blocks have at most max_queries queries.
std::unique_ptr<Method> make_method(const vk::Device& device, const GpuLayer& layer, const std::string& name,
                                    const MethodOptions& options, Mode mode, uint32_t max_queries);

// Rows and aggregation of a method scored per query head or per KV head (--gqa-agg).
struct HeadRows {
  uint32_t rows;
  uint32_t heads_per_row;
  uint32_t aggregate;  // AGGREGATE_* of layouts.h
};
HeadRows head_rows(const AttentionShape& shape, HeadAggregate aggregate);

}  // namespace kv
