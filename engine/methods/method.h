#pragma once
// Room methods/: the selection methods (one file each, methods/table.cpp lists
// them), their options and a block's step (selection, then attention); it includes base/ to kernels/.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/block.h"
#include "kernels/gpu_layer.h"
#include "methods/method_options.h"
#include "vk/pass.h"

namespace kv {

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
