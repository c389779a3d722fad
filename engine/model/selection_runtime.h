#pragma once
// The selection methods inside a model's attention: the plan's Method objects,
// one per layer and block kind, the budget and list each kind selects into,
// and how far into the cache each method's metadata (Quest's pages, Fier's
// bits) reaches. Model asks it, layer by layer, what to attend.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kernels/gpu_layer.h"
#include "methods/method.h"
#include "model/selection_plan.h"
#include "vk/pass.h"

namespace kv::model {

class SelectionRuntime {
 public:
  // `caches` are the model's KV caches, one a layer; blocks have at most `chunk` queries.
  SelectionRuntime(const vk::Device& device, const std::vector<std::unique_ptr<GpuLayer>>& caches, uint32_t chunk);

  // Builds the plan's methods for every layer (or takes those an earlier plan
  // built with the same options and dense layers); an empty plan is dense
  // everywhere. InputError for an unknown method, a zero budget, a layer the
  // model lacks, or a method a model run cannot feed. A refused plan leaves
  // the runtime dense.
  void select(const SelectionPlan& plan);
  const SelectionPlan& plan() const { return plan_; }

  // What layer `layer` does for `block`: its method, with the budget and the
  // list to select into, after recording into `pass` the method's metadata
  // update over the keys written since it last looked (up to the block's
  // last key). method is null where the layer attends densely: no method for
  // the block's kind, a dense layer, or a budget that holds every candidate.
  // A layer that selects for the layers after it (LessIsMore's, LayerRole::
  // select) records its method and attends densely itself (attend_densely); a
  // layer that reuses their set has a method that records nothing.
  struct LayerSelection {
    Method* method = nullptr;
    uint32_t budget = 0;
    const vk::Buffer* list = nullptr;
    bool attend_densely = false;
  };
  LayerSelection prepare(vk::Pass& pass, uint32_t layer, const Block& block);

  // The cache forgets the positions from `length` on: no method's metadata
  // covers them any more.
  void rewind(uint32_t length);

 private:
  // A block kind's methods, one per layer (null where the layer attends densely).
  struct BuiltMethods {
    std::vector<std::unique_ptr<Method>> by_layer;
    std::vector<bool> attends_densely;  // layers that select for the ones after them
    std::vector<uint32_t> covered;  // cache positions each layer's metadata covers
    uint32_t budget = 0;
    std::unique_ptr<vk::Buffer> list;  // the selection, [rows, width], shared by the layers in turn
  };
  BuiltMethods build(const std::string& method, Mode mode) const;
  // Sets the budget and grows the list to the widest layer's list_width.
  void set_budget(BuiltMethods& built, uint32_t budget) const;

  const vk::Device& device_;
  const std::vector<std::unique_ptr<GpuLayer>>& caches_;
  uint32_t chunk_;
  SelectionPlan plan_;
  // Every (method, mode) built for the options and dense layers of built_for_;
  // the plan's two point into it (null: dense).
  std::map<std::pair<std::string, Mode>, BuiltMethods> built_;
  std::pair<MethodOptions, std::vector<uint32_t>> built_for_;
  BuiltMethods* decode_ = nullptr;
  BuiltMethods* prefill_ = nullptr;
};

}  // namespace kv::model
