#pragma once
// The one table of selection methods: every front end (the CLI's parser and
// --help, the viewer's controls, bench's steps and byte model, the options key)
// and the tests read it. docs/adding-a-method.md walks through adding a row.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "methods/method.h"

namespace kv {

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

// What a layer of a model does under a method that selects at some layers
// for the ones after them (LessIsMore): most methods select at every layer
// for that layer (own).
enum class LayerRole {
  own,     // selects for itself
  dense,   // attends densely, selects nothing
  select,  // attends densely, and selects the set the layers after it attend
  reuse,   // attends the set the last selecting layer (one comes before it) chose
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
  // Each layer's role in a model run; null: every layer its own (LayerRole::own).
  LayerRole (*layer_role)(uint32_t layer, const MethodOptions& options) = nullptr;
};

LayerRole layer_role(const MethodSpec& spec, uint32_t layer, const MethodOptions& options);
// The layer whose queries and keys choose `layer`'s set: the last selecting
// layer at or before it, or the layer itself (own, and the dense layers
// before a method's first selecting layer, which eval shows as if they chose).
uint32_t selecting_layer(const MethodSpec& spec, uint32_t layer, const MethodOptions& options);

// Every method, in the order eval and the viewer list them.
const std::vector<MethodSpec>& method_table();
// The row of `name`; InputError listing the known methods when there is none.
const MethodSpec& find_method(const std::string& name);
bool is_method(const std::string& name);

// Builds a method for one layer and regime; blocks have at most max_queries queries.
std::unique_ptr<Method> make_method(const vk::Device& device, const GpuLayer& layer, const std::string& name,
                                    const MethodOptions& options, Mode mode, uint32_t max_queries);

// A method scored per query head, or per KV head over its group (--gqa-agg):
// the granularity of its selection, and how a row's heads combine (AGGREGATE_*
// of layouts.h).
Granularity aggregate_granularity(HeadAggregate aggregate);
uint32_t aggregate_code(HeadAggregate aggregate);

}  // namespace kv
