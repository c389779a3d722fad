#include "model/selection_runtime.h"

#include <algorithm>

#include "base/error.h"
#include "methods/table.h"

namespace kv::model {
namespace {

// A layer that attends the set an earlier layer chose (LayerRole::reuse): the
// list already holds it, so there is nothing to record.
class ReusedSelection final : public Method {
 public:
  explicit ReusedSelection(const Method& chooser) : chooser_(chooser) {}
  std::string name() const override { return chooser_.name(); }
  Granularity granularity() const override { return chooser_.granularity(); }
  nlohmann::json params() const override { return chooser_.params(); }
  uint32_t list_width(uint32_t budget) const override { return chooser_.list_width(budget); }
  void record(vk::Pass&, const Block&, const BlockInputs&, uint32_t, const vk::Buffer&) override {}

 private:
  const Method& chooser_;
};

}  // namespace

SelectionRuntime::SelectionRuntime(const vk::Device& device, const std::vector<std::unique_ptr<GpuLayer>>& caches,
                                   uint32_t chunk)
    : device_(device), caches_(caches), chunk_(chunk) {}

SelectionRuntime::BuiltMethods SelectionRuntime::build(const std::string& name, Mode mode) const {
  check_model_method(name);
  BuiltMethods built;
  const uint32_t max_queries = mode == Mode::decode ? 1 : chunk_;
  const std::vector<uint32_t>& dense_layers = plan_.dense_layers;
  const MethodSpec& spec = find_method(name);
  const Method* chooser = nullptr;  // the last layer that selected for the layers after it
  for (uint32_t l = 0; l < caches_.size(); ++l) {
    const LayerRole role = layer_role(spec, l, plan_.options);
    const bool listed_dense = std::find(dense_layers.begin(), dense_layers.end(), l) != dense_layers.end();
    std::unique_ptr<Method> method;
    if (role == LayerRole::select) {  // even where listed dense: the layers after it need its set
      method = make_method(device_, *caches_[l], name, plan_.options, mode, max_queries);
      chooser = method.get();
    } else if (role == LayerRole::reuse && !listed_dense) {
      method = std::make_unique<ReusedSelection>(*chooser);
    } else if (role == LayerRole::own && !listed_dense) {
      method = make_method(device_, *caches_[l], name, plan_.options, mode, max_queries);
    }
    built.by_layer.push_back(std::move(method));
    built.attends_densely.push_back(role == LayerRole::select);
  }
  built.covered.assign(caches_.size(), 0);
  return built;
}

void SelectionRuntime::set_budget(BuiltMethods& built, uint32_t budget) const {
  built.budget = budget;
  uint32_t width = 0;
  for (const auto& method : built.by_layer)
    if (method) width = std::max(width, method->list_width(budget));
  const size_t bytes = size_t(caches_[0]->shape.heads) * width * sizeof(int32_t);
  if (width > 0 && (!built.list || built.list->bytes() < bytes)) built.list = std::make_unique<vk::Buffer>(device_, bytes);
}

void SelectionRuntime::select(const SelectionPlan& plan) {
  const uint32_t layers = uint32_t(caches_.size());
  for (uint32_t l : plan.dense_layers)
    if (l >= layers)
      throw InputError("the model has layers 0 to " + std::to_string(layers - 1) + ", not " + std::to_string(l), "dense_layers");
  // A method's objects depend on its options and the dense layers, not on its
  // budget: a sweep that comes back to a method, or passes through dense
  // between methods, keeps their pipelines.
  if (plan.any() && std::make_pair(plan.options, plan.dense_layers) != built_for_) {
    built_.clear();
    built_for_ = {plan.options, plan.dense_layers};
  }
  plan_ = plan;
  auto kind = [&](const std::string& name, uint32_t budget, Mode mode, const char* setting) -> BuiltMethods* {
    if (name.empty()) return nullptr;
    if (budget == 0) throw InputError(std::string("the ") + mode_name(mode) + " method " + name + " needs a budget above 0", setting);
    auto it = built_.find({name, mode});
    if (it == built_.end()) it = built_.emplace(std::make_pair(name, mode), build(name, mode)).first;
    set_budget(it->second, budget);
    return &it->second;
  };
  try {
    decode_ = kind(plan.decode_method, plan.decode_budget, Mode::decode, "decode_budget");
    prefill_ = kind(plan.prefill_method, plan.prefill_budget, Mode::prefill, "prefill_budget");
  } catch (...) {
    plan_ = {};
    decode_ = prefill_ = nullptr;
    throw;
  }
}

void SelectionRuntime::rewind(uint32_t length) {
  for (auto& [method_and_mode, built] : built_)
    for (uint32_t& covered : built.covered) covered = std::min(covered, length);
}

SelectionRuntime::LayerSelection SelectionRuntime::prepare(vk::Pass& pass, uint32_t layer, const Block& block) {
  BuiltMethods* built = block.mode == Mode::decode ? decode_ : prefill_;
  Method* method = built ? built->by_layer[layer].get() : nullptr;
  // Where the budget holds every candidate, the selection would be all of them.
  if (!method || built->budget >= block.candidates()) return {};
  const uint32_t end = block.first_query + block.n_queries;
  vk::Pass::PartScope selection(pass, vk::Part::selection);
  method->record_cache_update(pass, built->covered[layer], end);
  built->covered[layer] = end;
  return {method, built->budget, built->list.get(), built->attends_densely[layer]};
}

}  // namespace kv::model
