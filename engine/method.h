#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "block.h"
#include "gpu_layer.h"
#include "vk/pass.h"

namespace kv {

enum class HeadAggregate : uint32_t { head, max, mean };  // --gqa-agg
enum class GroupReduce : uint32_t { mean, max };           // --quoka-group

// Every method's parameters (docs/methods.md), with their defaults. Each field
// is a 32-bit value that one row of option_table() (methods/table.h) reads and
// writes: the CLI's flags, the viewer's controls and key() all come from there.
struct MethodOptions {
  uint32_t page_size = 16;                      // quest
  uint32_t group_size = 32;                     // fier
  uint32_t n_q = 16;                            // quoka
  GroupReduce quoka_group = GroupReduce::mean;  // quoka
  HeadAggregate gqa_agg = HeadAggregate::head;  // quest, fier
  uint32_t n_sink = 4;                          // streaming
  uint32_t sparq_r = 32;                        // sparq: query components kept
  uint32_t snap_window = 32;                    // snapkv: observation window (queries)
  uint32_t snap_pool = 7;                       // snapkv: average-pooling kernel (odd)
  uint32_t loki_r = 32;                         // loki: principal components kept
  uint32_t sample_queries = 8;                  // sampleattention: queries sampled
  uint32_t sample_stride = 16;                  // sampleattention: positions between them

  // Every option, as text: a cache key for built methods and computed curves.
  std::string key() const;
};

// A budget as users write it: a key count ("256") or a percentage of the
// `tokens` keys ("3%", to the nearest key, at least 1). InputError, naming
// `option`, for anything else.
uint32_t parse_budget(const std::string& text, uint32_t tokens, const std::string& option);

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
  // A model run writes keys into the cache as it goes: the keys
  // [first_token, valid_tokens) changed since the method was built or last
  // told, and per-cache metadata (Quest's pages, Fier's bits) follows them
  // there, touching only the pages or blocks that hold them.
  virtual void record_cache_update(vk::Pass& pass, uint32_t first_token, uint32_t valid_tokens) {
    (void)pass, (void)first_token, (void)valid_tokens;
  }
  virtual void record(vk::Pass& pass, const Block& block, const BlockInputs& inputs, uint32_t budget,
                      const vk::Buffer& indices) = 0;
};

}  // namespace kv
