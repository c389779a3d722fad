#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "base/error.h"
#include "methods/block_step.h"
#include "model/random_weights.h"

namespace kv::model {
namespace {

// How a prefill chunk's linear layers run (ModelKernels::linear_kernels_for):
// every layer's inputs are hidden, intermediate or heads x head_dim channels.
MatrixKernels linear_kernels(const vk::Device& device, const ModelConfig& c, DType dtype, Model::LinearInputs inputs) {
  if (inputs != Model::LinearInputs::fastest) return MatrixKernels::none;
  return ModelKernels::linear_kernels_for(device, dtype, std::gcd(std::gcd(c.hidden, c.intermediate), c.head_dim), c.head_dim);
}

// A matrix's bytes on the device, in their own form. Blocks get a word of
// room past their end: a block's last field may be read with the word after
// it (ggml_blocks.glsl's unaligned reads).
DeviceMatrix upload_matrix(const vk::Device& device, const Weight& weight) {
  vk::Buffer buffer(device, weight.blocks ? (weight.data.size() + 3) / 4 * 4 + 4 : weight.data.size());
  buffer.upload(weight.data);
  return {std::move(buffer), weight.blocks};
}

// The values of the widest matrix of blocks: the room its chunk products widen it in.
uint64_t widest_blocks(const Checkpoint& checkpoint) {
  uint64_t widest = 0;
  auto consider = [&](const Weight& w) {
    if (w.blocks) widest = std::max(widest, w.count());
  };
  consider(checkpoint.lm_head());
  for (const LayerWeights& w : checkpoint.layers())
    for (const Weight* m : {&w.wq, &w.wk, &w.wv, &w.wo, &w.w_gate, &w.w_up, &w.w_down}) consider(*m);
  return widest;
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

std::string gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", double(bytes) / (1ull << 30));
  return text;
}

// The capacity, once the run is known to fit the device (plan_memory).
uint32_t checked_capacity(const vk::Device& device, const Checkpoint& checkpoint, uint32_t capacity, uint32_t chunk) {
  if (capacity == 0) throw InputError("a model run needs room for at least one token");
  check_sequence_length(checkpoint.config(), capacity);
  const MemoryPlan plan = plan_memory(checkpoint, capacity, std::max(1u, std::min(chunk, capacity)),
                                      device_class(device.info()) == DeviceClass::cpu);
  const uint64_t available = device.device_local_heap_bytes();
  if (plan.total() > available)
    throw InputError("the run needs " + gib(plan.total()) + " (weights " + gib(plan.weights) + ", KV cache " +
                         gib(plan.cache) + " for " + std::to_string(capacity) + " positions, activations " +
                         gib(plan.activations) + " for chunks of " + std::to_string(chunk) + ") and " + device.info().name +
                         " has " + gib(available));
  return capacity;
}

}  // namespace

Model::Model(const vk::Device& device, const Checkpoint& checkpoint, uint32_t capacity, uint32_t chunk,
             LinearInputs linear_inputs)
    : device_(device),
      config_(checkpoint.config()),
      dtype_(checkpoint.matrix_dtype()),
      capacity_(checked_capacity(device, checkpoint, capacity, chunk)),
      chunk_(std::max(1u, std::min(chunk, capacity))),
      kernels_(device, dtype_, linear_kernels(device, checkpoint.config(), dtype_, linear_inputs)),
      final_norm_(upload_floats(device, to_floats(checkpoint.final_norm()))),
      tied_(checkpoint.tied()),
      attention_(device, cache_shape(config_, capacity_), dtype_, Attention::Keys::dense, chunk_),
      sparse_attention_(device, cache_shape(config_, capacity_), dtype_, Attention::Keys::sparse, chunk_),
      selection_(device, caches_, chunk_) {
  const ModelConfig& c = config_;
  if (c.hidden % 2 || c.intermediate % 2)  // the linear layers take channels in pairs
    throw InputError(checkpoint.source() + ": the hidden and intermediate sizes must be even");
  // A random checkpoint's matrices are drawn on the device, each from its own
  // key (the embedding 0, the LM head 1, then seven a layer), in one pass.
  // Where model_matvec does not read blocks (a CPU: ModelKernels), each
  // matrix of blocks is widened to fp16 once, in the same pass: the blocks'
  // values rounded as a chunk's product rounds them, and a decode step at
  // the fp16 model's speed rather than widening every matrix every step.
  const bool widen_at_load = !kernels_.matvec_reads_blocks();
  vk::Pass fills(device, 2 * (2 + 7 * c.layers));
  std::vector<DeviceMatrix> blocks_to_widen;  // alive until the pass has run
  auto matrix = [&](const Weight& w, uint32_t index) {
    DeviceMatrix m;
    if (!checkpoint.random()) {
      m = upload_matrix(device, w);
    } else {
      m = DeviceMatrix{vk::Buffer(device, (w.bytes() + 3) / 4 * 4 + (w.blocks ? 4 : 0)), w.blocks};
      kernels_.random_fill(fills, m, random_weight_key(checkpoint.seed(), index));
    }
    if (!m.blocks || !widen_at_load) return m;
    DeviceMatrix widened{vk::Buffer(device, w.count() * 2), std::nullopt};
    kernels_.dequantize(fills, m, widened.buffer, w.count());
    blocks_to_widen.push_back(std::move(m));
    return widened;
  };
  if (chunk_ > 1 && !widen_at_load) kernels_.reserve_widened(widest_blocks(checkpoint));
  embedding_ = matrix(checkpoint.embedding(), 0);
  if (!tied_) lm_head_ = matrix(checkpoint.lm_head(), 1);
  for (uint32_t l = 0; l < c.layers; ++l) {
    const LayerWeights& w = checkpoint.layers()[l];
    const uint32_t first = 2 + 7 * l;
    DeviceLayer d{upload_floats(device, to_floats(w.attention_norm)), upload_floats(device, to_floats(w.mlp_norm)),
                  matrix(w.wq, first), matrix(w.wk, first + 1), matrix(w.wv, first + 2), matrix(w.wo, first + 3),
                  matrix(w.w_gate, first + 4), matrix(w.w_up, first + 5), matrix(w.w_down, first + 6),
                  upload_floats(device, w.bq.present() ? to_floats(w.bq) : std::vector<float>{}),
                  upload_floats(device, w.bk.present() ? to_floats(w.bk) : std::vector<float>{}),
                  upload_floats(device, w.bv.present() ? to_floats(w.bv) : std::vector<float>{}), w.bq.present()};
    if (c.qk_norm) {
      d.q_norm = upload_floats(device, to_floats(w.q_norm));
      d.k_norm = upload_floats(device, to_floats(w.k_norm));
    }
    layers_.push_back(std::move(d));
    caches_.push_back(std::make_unique<GpuLayer>(device, cache_shape(c, capacity_), dtype_, 1.0 / std::sqrt(double(c.head_dim))));
  }
  if (checkpoint.random() || !blocks_to_widen.empty()) fills.run();
  kept_queries_.resize(c.layers);
  // (cos, sin) of every position and channel pair: the angle is the fp32
  // product of the position and the inverse frequency, as transformers and
  // llama2.c form it, and its cosine and sine are taken in float64 (a GPU's
  // cos of an angle in the thousands is far from exact).
  std::vector<float> rotations(size_t(capacity_) * c.head_dim);
  for (uint32_t p = 0; p < capacity_; ++p)
    for (uint32_t i = 0; i < c.head_dim / 2; ++i) {
      const double angle = double(float(p) * float(c.rope_inverse_frequencies[i]));
      rotations[(size_t(p) * c.head_dim / 2 + i) * 2] = float(std::cos(angle) * c.rope_attention_factor);
      rotations[(size_t(p) * c.head_dim / 2 + i) * 2 + 1] = float(std::sin(angle) * c.rope_attention_factor);
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
  if (n > 1 && kernels_.linear_on_matrices()) mlp_half_ = vk::Buffer(device, n * c.intermediate * 2);
  logits_ = vk::Buffer(device, n * c.vocab * 4);
  chosen_ = vk::Buffer(device, size_t(capacity_) * 4, vk::MemoryKind::host_staging);
  time_stages(true);
}

void Model::time_stages(bool on) {
  for (auto& pass : passes_)
    pass = std::make_unique<vk::Pass>(device_, pass_dispatches(config_.layers), on ? vk::Pass::Timing::per_stage : vk::Pass::Timing::whole);
}

MemoryPlan plan_memory(const Checkpoint& checkpoint, uint32_t capacity, uint32_t chunk, bool blocks_widened) {
  const ModelConfig& c = checkpoint.config();
  const uint64_t element = dtype_size(checkpoint.matrix_dtype()), q_dim = uint64_t(c.heads) * c.head_dim,
                 kv_dim = uint64_t(c.kv_heads) * c.head_dim;
  MemoryPlan plan;
  uint64_t widened = 0;  // a CPU's fp16 copies of the blocks (the blocks themselves go once the copies are made)
  auto widen = [&](const Weight& m) {
    if (blocks_widened && m.blocks) widened += m.count() * 2 - m.bytes();
  };
  widen(checkpoint.embedding());
  if (!checkpoint.tied()) widen(checkpoint.lm_head());
  for (const LayerWeights& w : checkpoint.layers())
    for (const Weight* m : {&w.wq, &w.wk, &w.wv, &w.wo, &w.w_gate, &w.w_up, &w.w_down}) widen(*m);
  plan.weights = checkpoint.matrix_bytes() + widened + (2ull * c.layers + 1) * c.hidden * 4;
  plan.cache = 2ull * c.layers * kv_dim * capacity * element;
  const uint64_t n = chunk;
  plan.activations = n * (2ull * c.hidden + q_dim + 2 * kv_dim + 2ull * c.intermediate + c.vocab) * 4  // fp32 rows
                     + n * (q_dim * element + c.intermediate * 2)                                   // queries, fp16 MLP
                     + uint64_t(capacity) * c.head_dim * 4                                          // RoPE's table
                     + 2 * 4 * std::max<uint64_t>(n, 256) * c.heads * (c.head_dim + 2) * 4         // attention's partials
                     + (32ull << 20)                                                                // sliced linear layers
                     + (blocks_widened || chunk == 1 ? 0 : widest_blocks(checkpoint) * 2);          // a matrix of blocks widened
  return plan;
}

void Model::rewind(uint32_t length) {
  if (length > length_) throw InputError("rewind to " + std::to_string(length) + ": the run holds " + std::to_string(length_) + " positions");
  length_ = length;
  selection_.rewind(length);
}

const vk::Buffer& Model::record_attention(vk::Pass& pass, uint32_t layer, const Block& block) {
  const GpuLayer& cache = *caches_[layer];
  const AttentionRequest dense{&queries_, block.n_queries, block.first_query};
  const SelectionRuntime::LayerSelection selection = selection_.prepare(pass, layer, block);
  if (!selection.method) {
    vk::Pass::PartScope part(pass, vk::Part::attention);
    attention_.record(pass, cache, dense, "attention");
    return attention_.output_buffer();
  }
  Method& method = *selection.method;
  {
    vk::Pass::PartScope part(pass, vk::Part::selection);
    BlockInputs inputs{&queries_, nullptr};
    if (method.needs_dense_lse()) {  // TOVA and the prefill oracle read dense probabilities: selection's cost
      attention_.record(pass, cache, dense, "dense_lse");
      inputs.dense_lse = &attention_.log_sum_exp_buffer();
    }
    method.record(pass, block, inputs, selection.budget, *selection.list);
  }
  vk::Pass::PartScope part(pass, vk::Part::attention);
  if (selection.attend_densely) {  // it chose the set of the layers after it
    attention_.record(pass, cache, dense, "attention");
    return attention_.output_buffer();
  }
  sparse_attention_.record(pass, cache,
                           sparse_request(queries_, block, *selection.list, selection_rows(cache.shape, method.granularity()).heads_per_row,
                                          method.list_width(selection.budget)),
                           "sparse_attention");
  return sparse_attention_.output_buffer();
}

void Model::append(std::span<const int32_t> tokens, bool all_logits) {
  append_block(tokens, all_logits, tokens.size() == 1 ? Mode::decode : Mode::prefill);
}

void Model::append_block(std::span<const int32_t> tokens, bool all_logits, Mode mode) {
  const uint32_t n = uint32_t(tokens.size());
  if (n == 0 || n > chunk_) throw InputError("a model step takes 1 to " + std::to_string(chunk_) + " tokens, not " + std::to_string(n));
  check_room(n);
  for (int32_t t : tokens) check_token(t);
  vk::Pass& pass = *passes_[0];
  pass.clear();
  tokens_.upload(std::as_bytes(tokens));
  record_block(pass, tokens_, 0, n, all_logits, mode);
  pass.run();
  length_ += n;
  add_times(pass);
}

std::vector<int32_t> Model::append_greedy(int32_t first, uint32_t steps, const std::function<bool(int32_t)>& keep_going) {
  check_token(first);
  check_room(steps);
  // Step s reads the token step s - 1 chose on the GPU; the host records and
  // submits step s + 1 while step s runs, so that it adds no time of its own.
  std::vector<int32_t> choices;
  uint32_t running = 0, in_flight = 0;  // passes_[running] holds the oldest step in flight
  bool stopped = false;
  auto finish_oldest = [&] {
    vk::Pass& done = *passes_[running];
    done.wait();
    add_times(done);
    running ^= 1u;
    --in_flight;
    const uint32_t position = length_ - in_flight - 1;
    const int32_t choice = chosen_at(position);
    if (stopped) return;
    choices.push_back(choice);
    if (keep_going && !keep_going(choice)) stopped = true;
  };
  for (uint32_t s = 0; s < steps && !stopped; ++s) {
    vk::Pass& pass = *passes_[running ^ in_flight];
    pass.clear();
    if (s == 0) {
      tokens_.upload(std::as_bytes(std::span(&first, 1)));
      record_block(pass, tokens_, 0, 1, false, Mode::decode);
    } else {
      record_block(pass, chosen_, length_ - 1, 1, false, Mode::decode);
    }
    pass.submit();
    ++length_;
    if (++in_flight == 2) finish_oldest();
  }
  const bool overran = stopped && in_flight > 0;  // a step past the one that said stop: taken back
  while (in_flight > 0) finish_oldest();
  if (overran) rewind(length_ - 1);
  return choices;
}

void Model::check_room(uint64_t n) const {
  if (length_ + n > capacity_)
    throw InputError("the run holds " + std::to_string(capacity_) + " positions; " + std::to_string(length_ + n) + " asked");
}

void Model::check_token(int32_t token) const {
  if (token < 0 || uint32_t(token) >= config_.vocab)
    throw InputError("token " + std::to_string(token) + " is outside the vocabulary of " + std::to_string(config_.vocab));
}

void Model::record_block(vk::Pass& pass, const vk::Buffer& tokens, uint32_t first_token, uint32_t n, bool all_logits,
                         Mode mode) {
  const ModelConfig& c = config_;
  const uint32_t q_dim = c.heads * c.head_dim, kv_dim = c.kv_heads * c.head_dim;
  const Block block{mode, length_, n};
  kernels_.embed(pass, embedding_, tokens, x_, n, c.hidden, first_token);
  const float eps = float(c.rms_eps);
  // A linear layer of the block: n_in inputs to n_out outputs.
  // On tensor cores the linear layers take fp16 inputs: RMSNorm and SwiGLU
  // write them so (the attention's output stays fp32, rounded on the way).
  const bool half = kernels_.linear_takes_half_inputs(n);
  auto linear = [&](const DeviceMatrix& w, const vk::Buffer& in, vk::Buffer& out, const vk::Buffer* bias, uint32_t rows,
                    uint32_t n_in, uint32_t n_out, bool residual, uint32_t input_head_dim, const char* stage,
                    bool half_input = false) {
    kernels_.linear(pass, w, in, out, bias, {rows, n_in, n_out, residual ? 1u : 0u, 0u, input_head_dim}, stage, half_input);
  };
  // A decode step takes RoPE in its q/k/v dispatch on a GPU, unless q and k
  // have their own norms first (Qwen3).
  const bool rope_in_qkv = n == 1 && !c.qk_norm && kernels_.rope_in_qkv_dispatch();
  for (uint32_t l = 0; l < c.layers; ++l) {
    DeviceLayer& w = layers_[l];
    const bool bias = w.has_bias;
    const layouts::ModelRopePush rope{n, c.heads, c.kv_heads, c.head_dim, length_, capacity_,
                                      c.rope_pairs == RopePairs::interleaved ? 1u : 0u, kept_queries_[l] ? 1u : 0u};
    vk::Buffer* kept = kept_queries_[l] ? kept_queries_[l].get() : &queries_;
    const ModelKernels::RopeBuffers rope_buffers{&q_, &k_, &v_, &rotations_, &queries_, &caches_[l]->keys,
                                                 &caches_[l]->values, kept};
    if (n == 1) {  // a decode step: the norm and q, k and v in one dispatch
      const ModelKernels::TokenProjection qkv[3] = {{&w.wq, &q_, bias ? &w.bq : nullptr, q_dim},
                                                    {&w.wk, &k_, bias ? &w.bk : nullptr, kv_dim},
                                                    {&w.wv, &v_, bias ? &w.bv : nullptr, kv_dim}};
      const ModelKernels::TokenRope token_rope{rope_buffers, rope};
      kernels_.token_linear(pass, qkv, x_, c.hidden, &w.attention_norm, eps, false, false, "qkv", 0,
                            rope_in_qkv ? &token_rope : nullptr);
    } else {
      kernels_.rmsnorm(pass, x_, w.attention_norm, normed_, n, 0, c.hidden, eps, half);
      linear(w.wq, normed_, q_, bias ? &w.bq : nullptr, n, c.hidden, q_dim, false, 0, "qkv", half);
      linear(w.wk, normed_, k_, bias ? &w.bk : nullptr, n, c.hidden, kv_dim, false, 0, "qkv", half);
      linear(w.wv, normed_, v_, bias ? &w.bv : nullptr, n, c.hidden, kv_dim, false, 0, "qkv", half);
    }
    if (c.qk_norm) {  // Qwen3: each head's q and k through an RMSNorm of d channels, in place
      kernels_.rmsnorm(pass, q_, w.q_norm, q_, n * c.heads, 0, c.head_dim, eps);
      kernels_.rmsnorm(pass, k_, w.k_norm, k_, n * c.kv_heads, 0, c.head_dim, eps);
    }
    if (!rope_in_qkv) kernels_.rope(pass, rope_buffers, rope);
    const vk::Buffer& attended = record_attention(pass, l, block);
    linear(w.wo, attended, x_, nullptr, n, q_dim, c.hidden, true, c.head_dim, "output_projection");
    vk::Buffer& mlp_hidden = half ? mlp_half_ : gate_;
    if (n == 1) {  // the norm, gate, up and SwiGLU in one dispatch
      const ModelKernels::TokenProjection gate_up[2] = {{&w.w_gate, &gate_, nullptr, c.intermediate},
                                                        {&w.w_up, &up_, nullptr, c.intermediate}};
      kernels_.token_linear(pass, gate_up, x_, c.hidden, &w.mlp_norm, eps, true, false, "mlp_up");
    } else {
      kernels_.rmsnorm(pass, x_, w.mlp_norm, normed_, n, 0, c.hidden, eps, half);
      linear(w.w_gate, normed_, gate_, nullptr, n, c.hidden, c.intermediate, false, 0, "mlp_up", half);
      linear(w.w_up, normed_, up_, nullptr, n, c.hidden, c.intermediate, false, 0, "mlp_up", half);
      kernels_.swiglu(pass, gate_, up_, mlp_hidden, n * c.intermediate, half);
    }
    linear(w.w_down, mlp_hidden, x_, nullptr, n, c.intermediate, c.hidden, true, 0, "mlp_down", half);
  }
  logit_rows_ = all_logits ? n : 1;
  const DeviceMatrix& head = tied_ ? embedding_ : lm_head_;
  if (n == 1) {
    const ModelKernels::TokenProjection logits{&head, &logits_, nullptr, c.vocab};
    kernels_.token_linear(pass, std::span(&logits, 1), x_, c.hidden, &final_norm_, eps, false, false, "lm_head");
  } else {
    kernels_.rmsnorm(pass, x_, final_norm_, normed_, logit_rows_, n - logit_rows_, c.hidden, eps);
    linear(head, normed_, logits_, nullptr, logit_rows_, c.hidden, c.vocab, false, 0, "lm_head");
  }
  if (logit_rows_ == 1) kernels_.argmax(pass, logits_, chosen_, c.vocab, length_ + n - 1);  // the greedy choice in the same submission
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

void Model::prefill(std::span<const int32_t> tokens, bool all_logits, const std::function<void(uint32_t)>& after_chunk,
                    uint32_t chunk) {
  if (chunk > chunk_) throw InputError("prefill chunks of " + std::to_string(chunk) + " tokens in a model of chunk " + std::to_string(chunk_), "chunk");
  const size_t step = chunk ? chunk : chunk_;
  for (size_t first = 0; first < tokens.size(); first += step) {
    const size_t n = std::min<size_t>(step, tokens.size() - first);
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
  return chosen_at(length_ - 1);
}

int32_t Model::chosen_at(uint32_t position) const {
  int32_t choice = 0;
  chosen_.download(std::as_writable_bytes(std::span(&choice, 1)), VkDeviceSize(position) * 4);
  return choice;
}

std::map<std::string, double> Model::ms_by_part() const {
  std::map<std::string, double> parts;
  for (vk::Part p : vk::kParts) parts[vk::part_name(p)] = 0.0;
  for (const vk::StageTime& t : stage_times_) parts[vk::part_name(t.part)] += t.milliseconds;
  return parts;
}

uint32_t Model::pass_dispatches(uint32_t layers) {
  // A layer: its own 28 at most (four RMSNorms with Qwen3's of q and k,
  // RoPE, SwiGLU, and seven linear layers, each three dispatches where its
  // weights are blocks widened first and its input channels are sliced);
  // attention's 4 at most (a dense pass feeding a method, and the sparse
  // pass, each partial and merge); a method's own stages, 16 at most (the
  // window methods' six with their top-k are the most). Around the layers:
  // the embedding, the final RMSNorm, the LM head (three) and the greedy
  // choice. Pass refuses a dispatch past its count.
  constexpr uint32_t kModel = 28, kAttention = 4, kMethod = 16, kAround = 6;
  return layers * (kModel + kAttention + kMethod) + kAround;
}

void Model::add_times(const vk::Pass& pass) {
  for (const vk::StageTime& t : pass.stage_times()) {
    auto it = std::find_if(stage_times_.begin(), stage_times_.end(),
                           [&](const vk::StageTime& s) { return s.stage == t.stage && s.part == t.part; });
    if (it == stage_times_.end()) stage_times_.push_back(t);
    else it->milliseconds += t.milliseconds;
  }
}

}  // namespace kv::model
