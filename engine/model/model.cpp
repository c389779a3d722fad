#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "../shaders/layouts.h"
#include "element_type.h"
#include "error.h"
#include "block_step.h"
#include "layer_kernel.h"
#include "methods/table.h"
#include "model_argmax.spv.h"
#include "model_embed.spv.h"
#include "model_matmul.spv.h"
#include "model_matmul_matrix.spv.h"
#include "model_matmul_matrix_khr.spv.h"
#include "model_matvec.spv.h"
#include "model_rmsnorm.spv.h"
#include "model_rope.spv.h"
#include "model_swiglu.spv.h"

namespace kv::model {
namespace {

// model_matmul's tile (rows x tokens a workgroup), model_matvec's rows a
// workgroup, model_matmul_matrix's tile.
constexpr uint32_t kTileRows = 32, kTileTokens = 8, kMatvecRows = 8;
constexpr uint32_t kMatrixRows = 64, kMatrixTokens = 32;

// Whether a prefill chunk's linear layers run on tensor cores
// (model_matmul_matrix.comp): fp16 weights whose rows, and an input head's
// channels, come in 16-byte pieces.
bool linear_layers_on_matrices(const vk::Device& device, const ModelConfig& c, DType dtype) {
  return device.info().cooperative_matrix && dtype == DType::f16 && c.hidden % 8 == 0 && c.intermediate % 8 == 0 &&
         c.head_dim % 8 == 0;
}

vk::Buffer upload_weight(const vk::Device& device, const Weight& weight) {
  vk::Buffer buffer(device, weight.data.size());
  buffer.upload(weight.data);
  return buffer;
}

vk::Buffer upload_floats(const vk::Device& device, const std::vector<float>& values) {
  vk::Buffer buffer(device, std::max<size_t>(values.size(), 1) * sizeof(float));
  if (!values.empty()) buffer.upload_values<float>(values);
  else buffer.fill(0);
  return buffer;
}

AttentionShape cache_shape(const ModelConfig& c, uint32_t capacity) {
  return {c.heads, c.kv_heads, capacity, c.head_dim};
}

uint32_t checked_capacity(const ModelConfig& config, uint32_t capacity) {
  if (capacity == 0) throw InputError("a model run needs room for at least one token");
  check_sequence_length(config, capacity);
  return capacity;
}

}  // namespace

Model::Model(const vk::Device& device, const Checkpoint& checkpoint, uint32_t capacity, uint32_t chunk)
    : device_(device),
      config_(checkpoint.config()),
      dtype_(checkpoint.matrix_dtype()),
      capacity_(checked_capacity(checkpoint.config(), capacity)),
      chunk_(std::max(1u, std::min(chunk, capacity))),
      embed_(device, "model_embed", model_embed_spirv, {3, sizeof(layouts::ModelEmbedPush)}, std::vector<uint32_t>{element_type(dtype_)}),
      rmsnorm_(device, "model_rmsnorm", model_rmsnorm_spirv, {3, sizeof(layouts::ModelRmsNormPush)}, {}),
      matvec_(device, "model_matvec", model_matvec_spirv, {4, sizeof(layouts::ModelMatmulPush)},
              std::vector<uint32_t>{element_type(dtype_)}),
      matmul_(device, "model_matmul", model_matmul_spirv, {4, sizeof(layouts::ModelMatmulPush)},
              std::vector<uint32_t>{element_type(dtype_), kTileRows, kTileTokens, kTileRows * kTileTokens}),
      rope_(device, "model_rope", model_rope_spirv, {8, sizeof(layouts::ModelRopePush)}, std::vector<uint32_t>{element_type(dtype_)}),
      swiglu_(device, "model_swiglu", model_swiglu_spirv, {2, sizeof(layouts::ModelSwigluPush)}, {}),
      argmax_(device, "model_argmax", model_argmax_spirv, {2, sizeof(layouts::ModelArgmaxPush)}, {}),
      embedding_(upload_weight(device, checkpoint.embedding())),
      final_norm_(upload_floats(device, to_floats(checkpoint.final_norm()))),
      no_bias_(upload_floats(device, {})),
      tied_(checkpoint.tied()),
      attention_(device, cache_shape(config_, capacity_), dtype_, Attention::Keys::dense, chunk_),
      sparse_attention_(device, cache_shape(config_, capacity_), dtype_, Attention::Keys::sparse, chunk_) {
  const ModelConfig& c = config_;
  if (c.hidden % 2 || c.intermediate % 2)  // the linear layers take channels in pairs
    throw InputError(checkpoint.source() + ": the hidden and intermediate sizes must be even");
  if (!tied_) lm_head_ = upload_weight(device, checkpoint.lm_head());
  if (linear_layers_on_matrices(device, c, dtype_))
    matmul_matrix_.emplace(device, "model_matmul_matrix",
                           vk::cooperative_matrix_spirv(device, model_matmul_matrix_spirv, model_matmul_matrix_khr_spirv),
                           vk::KernelLayout{4, sizeof(layouts::ModelMatmulPush)}, std::vector<uint32_t>{});
  for (const LayerWeights& w : checkpoint.layers()) {
    DeviceLayer d{upload_floats(device, to_floats(w.attention_norm)), upload_floats(device, to_floats(w.mlp_norm)),
                  upload_weight(device, w.wq), upload_weight(device, w.wk), upload_weight(device, w.wv),
                  upload_weight(device, w.wo), upload_weight(device, w.w_gate), upload_weight(device, w.w_up),
                  upload_weight(device, w.w_down),
                  upload_floats(device, w.bq.present() ? to_floats(w.bq) : std::vector<float>{}),
                  upload_floats(device, w.bk.present() ? to_floats(w.bk) : std::vector<float>{}),
                  upload_floats(device, w.bv.present() ? to_floats(w.bv) : std::vector<float>{}), w.bq.present()};
    layers_.push_back(std::move(d));
    caches_.push_back(std::make_unique<GpuLayer>(device, cache_shape(c, capacity_), dtype_, 1.0 / std::sqrt(double(c.head_dim))));
  }
  kept_queries_.resize(c.layers);
  // (cos, sin) of every position and channel pair: the angle is the fp32
  // product of the position and the inverse frequency, as transformers and
  // llama2.c form it, and its cosine and sine are taken in float64 (a GPU's
  // cos of an angle in the thousands is far from exact).
  std::vector<float> rotations(size_t(capacity_) * c.head_dim);
  for (uint32_t p = 0; p < capacity_; ++p)
    for (uint32_t i = 0; i < c.head_dim / 2; ++i) {
      const double angle = double(float(p) * float(c.rope_inverse_frequencies[i]));
      rotations[(size_t(p) * c.head_dim / 2 + i) * 2] = float(std::cos(angle));
      rotations[(size_t(p) * c.head_dim / 2 + i) * 2 + 1] = float(std::sin(angle));
    }
  rotations_ = upload_floats(device, rotations);
  const size_t n = chunk_, q_dim = size_t(c.heads) * c.head_dim, kv_dim = size_t(c.kv_heads) * c.head_dim;
  // The step's tokens and its greedy choice cross to and from the host every
  // step: host-visible memory spares a staging copy and a submission each way.
  tokens_ = vk::Buffer(device, n * 4, vk::MemoryKind::host_staging);
  x_ = vk::Buffer(device, n * c.hidden * 4);
  normed_ = vk::Buffer(device, n * c.hidden * 4);
  q_ = vk::Buffer(device, n * q_dim * 4);
  k_ = vk::Buffer(device, n * kv_dim * 4);
  v_ = vk::Buffer(device, n * kv_dim * 4);
  queries_ = vk::Buffer(device, n * q_dim * dtype_size(dtype_));
  gate_ = vk::Buffer(device, n * c.intermediate * 4);
  up_ = vk::Buffer(device, n * c.intermediate * 4);
  logits_ = vk::Buffer(device, n * c.vocab * 4);
  chosen_ = vk::Buffer(device, 4, vk::MemoryKind::host_staging);
}

void Model::record_matmul(vk::Pass& pass, const vk::Buffer& weights, const vk::Buffer& input, vk::Buffer& output,
                          const vk::Buffer* bias, uint32_t n_tokens, uint32_t n_in, uint32_t n_out, bool accumulate,
                          uint32_t input_head_dim, const std::string& stage) const {
  const layouts::ModelMatmulPush push{n_tokens, n_in, n_out, accumulate ? 1u : 0u, bias ? 1u : 0u, input_head_dim};
  if (n_tokens > 1 && matmul_matrix_)
    pass.dispatch(*matmul_matrix_, {&weights, &input, &output, bias ? bias : &no_bias_}, push, ceil_div(n_out, kMatrixRows),
                  ceil_div(n_tokens, kMatrixTokens), 1, stage);
  else if (n_tokens == 1)
    pass.dispatch(matvec_, {&weights, &input, &output, bias ? bias : &no_bias_}, push, ceil_div(n_out, kMatvecRows), 1, 1, stage);
  else
    pass.dispatch(matmul_, {&weights, &input, &output, bias ? bias : &no_bias_}, push, ceil_div(n_out, kTileRows),
                  ceil_div(n_tokens, kTileTokens), 1, stage);
}

namespace {

// Methods whose inputs a model run does not have: every past query (SnapKV,
// H2O, SampleAttention), or every key of the cache at once (Loki's basis).
void refuse_outside_model_runs(const MethodSpec& spec, const std::string& command) {
  const std::string who = (command.empty() ? "" : command + ": ") + spec.name;
  if (spec.reads_past_queries)
    throw InputError(who + " reads every past query, which a model run does not keep: run it with eval on a capture");
  if (spec.builds_from_whole_cache)
    throw InputError(who + " builds from the whole cache at once, which a model run fills as it goes: run it with eval on a capture");
}

}  // namespace

MethodSweep split_method_sweep(const std::vector<std::string>& names, const std::string& command) {
  MethodSweep sweep;
  for (const std::string& name : names) {
    if (name == "dense") {
      sweep.dense = true;
      continue;
    }
    refuse_outside_model_runs(find_method(name), command);
    sweep.methods.push_back(name);
  }
  return sweep;
}

Model::RegimeMethods Model::build_regime(const std::string& name, Mode mode) const {
  refuse_outside_model_runs(find_method(name), "");
  RegimeMethods regime;
  const uint32_t max_queries = mode == Mode::decode ? 1 : chunk_;
  for (uint32_t l = 0; l < config_.layers; ++l) {
    const bool dense = std::find(plan_.dense_layers.begin(), plan_.dense_layers.end(), l) != plan_.dense_layers.end();
    regime.by_layer.push_back(dense ? nullptr : make_method(device_, *caches_[l], name, plan_.options, mode, max_queries));
  }
  regime.updated.assign(config_.layers, 0);
  return regime;
}

void Model::set_budget(RegimeMethods& regime, uint32_t budget) const {
  regime.budget = budget;
  uint32_t width = 0;
  for (const auto& method : regime.by_layer)
    if (method) width = std::max(width, method->list_width(budget));
  const size_t bytes = size_t(config_.heads) * width * sizeof(int32_t);
  if (width > 0 && (!regime.list || regime.list->bytes() < bytes)) regime.list = std::make_unique<vk::Buffer>(device_, bytes);
}

void Model::select(const SelectionPlan& plan) {
  for (uint32_t l : plan.dense_layers)
    if (l >= config_.layers)
      throw InputError("--dense-layers: the model has layers 0 to " + std::to_string(config_.layers - 1) + ", not " + std::to_string(l));
  // A method's objects depend on its options and the dense layers, not on its
  // budget: a sweep that comes back to a method, or passes through dense
  // between methods, keeps their pipelines.
  std::string setup = plan.options.key() + " dense layers";
  for (uint32_t l : plan.dense_layers) setup += " " + std::to_string(l);
  if (plan.any() && setup != built_setup_) {
    built_.clear();
    built_setup_ = setup;
  }
  plan_ = plan;
  auto regime = [&](const std::string& name, uint32_t budget, Mode mode) -> RegimeMethods* {
    if (name.empty()) return nullptr;
    if (budget == 0) throw InputError(std::string("the ") + mode_name(mode) + " method " + name + " needs a budget above 0");
    auto it = built_.find({name, mode});
    if (it == built_.end()) it = built_.emplace(std::make_pair(name, mode), build_regime(name, mode)).first;
    set_budget(it->second, budget);
    return &it->second;
  };
  try {
    decode_methods_ = regime(plan.decode_method, plan.decode_budget, Mode::decode);
    prefill_methods_ = regime(plan.prefill_method, plan.prefill_budget, Mode::prefill);
  } catch (...) {
    plan_ = {};
    decode_methods_ = prefill_methods_ = nullptr;
    throw;
  }
}

void Model::rewind(uint32_t length) {
  if (length > length_) throw InputError("rewind to " + std::to_string(length) + ": the run holds " + std::to_string(length_) + " positions");
  length_ = length;
  for (auto& [method_and_mode, regime] : built_)
    for (uint32_t& covered : regime.updated) covered = std::min(covered, length);
}

const vk::Buffer& Model::record_attention(vk::Pass& pass, uint32_t layer, const Block& block) {
  RegimeMethods* regime = block.mode == Mode::decode ? decode_methods_ : prefill_methods_;
  Method* method = regime ? regime->by_layer[layer].get() : nullptr;
  const AttentionRequest dense{&queries_, block.n_queries, block.first_query};
  // Where the budget holds every candidate, the selection would be all of them.
  if (!method || regime->budget >= block.candidates()) {
    attention_.record(pass, *caches_[layer], dense, "attention");
    return attention_.output_buffer();
  }
  const GpuLayer& cache = *caches_[layer];
  method->record_cache_update(pass, regime->updated[layer], length_ + block.n_queries);
  regime->updated[layer] = length_ + block.n_queries;
  BlockInputs inputs{&queries_, nullptr};
  if (method->needs_dense_lse()) {  // TOVA and the prefill oracle read dense probabilities
    attention_.record(pass, cache, dense, "attention");
    inputs.dense_lse = &attention_.log_sum_exp_buffer();
  }
  const uint32_t width = method->list_width(regime->budget);
  method->record(pass, block, inputs, regime->budget, *regime->list);
  sparse_attention_.record(pass, cache,
                           sparse_request(queries_, block, *regime->list, heads_per_row(cache.shape, method->granularity()), width),
                           "sparse_attention");
  return sparse_attention_.output_buffer();
}

void Model::append(std::span<const int32_t> tokens, bool all_logits) {
  append_block(tokens, all_logits, tokens.size() == 1 ? Mode::decode : Mode::prefill);
}

void Model::append_block(std::span<const int32_t> tokens, bool all_logits, Mode mode) {
  const ModelConfig& c = config_;
  const uint32_t n = uint32_t(tokens.size());
  if (n == 0 || n > chunk_) throw InputError("a model step takes 1 to " + std::to_string(chunk_) + " tokens, not " + std::to_string(n));
  if (uint64_t(length_) + n > capacity_)
    throw InputError("the run holds " + std::to_string(capacity_) + " positions; " + std::to_string(length_ + n) + " asked");
  for (int32_t t : tokens)
    if (t < 0 || uint32_t(t) >= c.vocab) throw InputError("token " + std::to_string(t) + " is outside the vocabulary of " + std::to_string(c.vocab));
  tokens_.upload(std::as_bytes(tokens));
  const uint32_t q_dim = c.heads * c.head_dim, kv_dim = c.kv_heads * c.head_dim;
  const Block block{mode, length_, n};
  vk::Pass pass(device_, 64 * c.layers + 16);
  pass.dispatch(embed_, {&embedding_, &tokens_, &x_}, layouts::ModelEmbedPush{n, c.hidden}, ceil_div(n * c.hidden, 256), 1, 1, "embed");
  const float eps = float(c.rms_eps);
  for (uint32_t l = 0; l < c.layers; ++l) {
    DeviceLayer& w = layers_[l];
    const bool bias = w.has_bias;
    pass.dispatch(rmsnorm_, {&x_, &w.attention_norm, &normed_}, layouts::ModelRmsNormPush{n, 0, c.hidden, eps}, n, 1, 1, "rmsnorm");
    record_matmul(pass, w.wq, normed_, q_, bias ? &w.bq : nullptr, n, c.hidden, q_dim, false, 0, "qkv");
    record_matmul(pass, w.wk, normed_, k_, bias ? &w.bk : nullptr, n, c.hidden, kv_dim, false, 0, "qkv");
    record_matmul(pass, w.wv, normed_, v_, bias ? &w.bv : nullptr, n, c.hidden, kv_dim, false, 0, "qkv");
    const layouts::ModelRopePush rope{n, c.heads, c.kv_heads, c.head_dim, length_, capacity_,
                                      c.rope_pairs == RopePairs::interleaved ? 1u : 0u, kept_queries_[l] ? 1u : 0u};
    const vk::Buffer* kept = kept_queries_[l] ? kept_queries_[l].get() : &queries_;
    pass.dispatch(rope_, {&q_, &k_, &v_, &rotations_, &queries_, &caches_[l]->keys, &caches_[l]->values, kept}, rope,
                  ceil_div(n * (c.heads + 2 * c.kv_heads) * c.head_dim / 2, 256), 1, 1, "rope");
    const vk::Buffer& attended = record_attention(pass, l, block);
    record_matmul(pass, w.wo, attended, x_, nullptr, n, q_dim, c.hidden, true, c.head_dim, "output_projection");
    pass.dispatch(rmsnorm_, {&x_, &w.mlp_norm, &normed_}, layouts::ModelRmsNormPush{n, 0, c.hidden, eps}, n, 1, 1, "rmsnorm");
    record_matmul(pass, w.w_gate, normed_, gate_, nullptr, n, c.hidden, c.intermediate, false, 0, "mlp_up");
    record_matmul(pass, w.w_up, normed_, up_, nullptr, n, c.hidden, c.intermediate, false, 0, "mlp_up");
    pass.dispatch(swiglu_, {&gate_, &up_}, layouts::ModelSwigluPush{n * c.intermediate}, ceil_div(n * c.intermediate, 256), 1, 1, "swiglu");
    record_matmul(pass, w.w_down, gate_, x_, nullptr, n, c.intermediate, c.hidden, true, 0, "mlp_down");
  }
  logit_rows_ = all_logits ? n : 1;
  pass.dispatch(rmsnorm_, {&x_, &final_norm_, &normed_}, layouts::ModelRmsNormPush{logit_rows_, n - logit_rows_, c.hidden, eps},
                logit_rows_, 1, 1, "rmsnorm");
  record_matmul(pass, tied_ ? embedding_ : lm_head_, normed_, logits_, nullptr, logit_rows_, c.hidden, c.vocab, false, 0, "lm_head");
  if (logit_rows_ == 1)  // the greedy choice in the same submission
    pass.dispatch(argmax_, {&logits_, &chosen_}, layouts::ModelArgmaxPush{c.vocab}, 1, 1, 1, "argmax");
  pass.run();
  length_ += n;
  add_times(pass);
}

void Model::keep_queries(uint32_t layer) {
  if (layer >= config_.layers) throw InputError("the model has no layer " + std::to_string(layer));
  if (!kept_queries_[layer])
    kept_queries_[layer] = std::make_unique<vk::Buffer>(
        device_, size_t(config_.heads) * capacity_ * config_.head_dim * dtype_size(dtype_));
}

const vk::Buffer& Model::kept_queries(uint32_t layer) const {
  if (layer >= config_.layers || !kept_queries_[layer]) throw InputError("layer " + std::to_string(layer) + "'s queries were not kept");
  return *kept_queries_[layer];
}

void Model::prefill(std::span<const int32_t> tokens, bool all_logits, const std::function<void(uint32_t)>& after_chunk) {
  for (size_t first = 0; first < tokens.size(); first += chunk_) {
    const size_t n = std::min<size_t>(chunk_, tokens.size() - first);
    append_block(tokens.subspan(first, n), all_logits, Mode::prefill);
    if (after_chunk) after_chunk(uint32_t(first + n));
  }
}

std::vector<float> Model::logits() const { return logits_.download_values<float>(size_t(logit_rows_) * config_.vocab); }

int32_t Model::greedy() const {
  if (logit_rows_ == 0) throw InputError("no logits yet: append tokens first");
  if (logit_rows_ != 1) {  // every row's logits were asked for: the last row's choice, here
    const std::vector<float> all = logits();
    const float* last = all.data() + size_t(logit_rows_ - 1) * config_.vocab;
    return int32_t(std::max_element(last, last + config_.vocab) - last);
  }
  return chosen_.download_values<int32_t>(1)[0];
}

std::map<std::string, double> Model::ms_by_part() const {
  std::map<std::string, double> parts{{"model", 0.0}, {"attention", 0.0}, {"selection", 0.0}};
  for (const vk::StageTime& t : stage_times_) parts[stage_part(t.stage)] += t.milliseconds;
  return parts;
}

const char* Model::stage_part(const std::string& stage) {
  static const char* const kModelStages[] = {"embed",    "rmsnorm",   "qkv",     "rope",    "output_projection",
                                             "mlp_up",   "swiglu",    "mlp_down", "lm_head", "argmax"};
  for (const char* own : kModelStages)
    if (stage == own) return "model";
  if (stage.rfind("attention_", 0) == 0 || stage.rfind("sparse_attention_", 0) == 0) return "attention";
  return "selection";
}

void Model::add_times(const vk::Pass& pass) {
  for (const vk::StageTime& t : pass.stage_times()) {
    auto it = std::find_if(stage_times_.begin(), stage_times_.end(), [&](const vk::StageTime& s) { return s.stage == t.stage; });
    if (it == stage_times_.end()) stage_times_.push_back(t);
    else it->milliseconds += t.milliseconds;
  }
}

}  // namespace kv::model
