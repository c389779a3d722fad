#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpu_layer.h"
#include "vk/pass.h"

namespace kv {

enum class Mode { decode, prefill };
enum class Granularity { query_head, kv_head };
enum class HeadAggregate { head, max, mean };  // --gqa-agg

const char* mode_name(Mode mode);
const char* granularity_name(Granularity granularity);

// Every method's parameters (../shared/spec/METHODS.md), with the spec's defaults.
struct MethodOptions {
  uint32_t page_size = 16;   // quest
  uint32_t group_size = 32;  // fier
  uint32_t n_q = 16;         // quoka
  bool quoka_max = false;    // quoka --quoka-group max
  HeadAggregate gqa_agg = HeadAggregate::head;  // quest, fier
  uint32_t n_sink = 4;       // streaming
  uint32_t sparq_r = 32;     // sparq: query components kept
  uint32_t snap_window = 32;  // snapkv: observation window (queries)
  uint32_t snap_pool = 7;     // snapkv: average-pooling kernel (odd)
  uint32_t loki_r = 32;       // loki: principal components kept
  uint32_t sample_queries = 8;   // sampleattention: queries sampled
  uint32_t sample_stride = 16;   // sampleattention: positions between them

  // Every field, as text: a cache key for built methods and computed curves.
  std::string key() const {
    return std::to_string(page_size) + "/" + std::to_string(group_size) + "/" + std::to_string(n_q) + "/" +
           std::to_string(quoka_max) + "/" + std::to_string(int(gqa_agg)) + "/" + std::to_string(n_sink) + "/" +
           std::to_string(sparq_r) + "/" + std::to_string(snap_window) + "/" + std::to_string(snap_pool) + "/" +
           std::to_string(loki_r) + "/" + std::to_string(sample_queries) + "/" + std::to_string(sample_stride);
  }
};

// One selection step: a decode probe at position t, or a prefill chunk.
struct Block {
  Mode mode = Mode::decode;
  uint32_t first_query = 0;  // decode: t; prefill: the chunk's first position
  uint32_t n_queries = 1;    // decode: 1; prefill: the chunk's length
  // Keys a selection picks from: [0, t] in decode, the past [0, c * B_CP) in prefill.
  uint32_t candidates() const { return mode == Mode::decode ? first_query + 1 : first_query; }
};

// The last `probes` positions, one block each.
std::vector<Block> decode_blocks(uint32_t tokens, uint32_t probes);
// Chunks of `chunk` queries; chunk 0 is included (it has no past).
std::vector<Block> prefill_blocks(uint32_t tokens, uint32_t chunk);

// What every method reads for a block, on the device.
struct BlockInputs {
  const vk::Buffer* queries = nullptr;    // [H, n, d], storage dtype
  const vk::Buffer* dense_lse = nullptr;  // [H, n] float, from dense attention of the block
};

// Where a method leaves its per-candidate scores after record(): [rows, stride]
// floats; a score covers `tokens_per_score` consecutive keys (Quest: a page).
struct ScoreView {
  const vk::Buffer* buffer = nullptr;
  uint32_t rows = 0;
  uint32_t stride = 0;
  uint32_t tokens_per_score = 1;
};

// A selection method on the GPU: named, timed stages that write, for a block,
// the selected key positions [rows, list_width(budget)], ascending and padded
// with -1; rows are query heads or KV heads (granularity).
class Method {
 public:
  virtual ~Method() = default;
  virtual std::string name() const = 0;
  virtual Granularity granularity() const = 0;
  virtual nlohmann::json params() const = 0;
  virtual uint32_t list_width(uint32_t budget) const { return budget; }
  // Stage times of building per-cache metadata (Quest's pages, Fier's bits), if any.
  virtual std::vector<vk::StageTime> build_times() const { return {}; }
  // The scores behind the last selection; none for methods that do not score.
  virtual ScoreView scores() const { return {}; }
  // Whether record() reads inputs.dense_lse (dense attention must run first).
  virtual bool needs_dense_lse() const { return false; }
  virtual void record(vk::Pass& pass, const Block& block, const BlockInputs& inputs, uint32_t budget,
                      const vk::Buffer& indices) = 0;
};

// Method names of the registry, in the order eval prints them.
const std::vector<std::string>& method_names();
bool method_supports(const std::string& name, Mode mode);

// Builds a method for one layer and regime; blocks have at most max_queries queries.
std::unique_ptr<Method> make_method(const vk::Device& device, const GpuLayer& layer, const std::string& name,
                                    const MethodOptions& options, Mode mode, uint32_t max_queries);

}  // namespace kv
