#include "model/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "base/half.h"
#include "model/files.h"
#include "model/gguf.h"

namespace kv::model {
namespace {

// Where each tensor of a Hugging Face directory lies: one model.safetensors,
// or the shards model.safetensors.index.json names (each opened once).
class ShardedTensors {
 public:
  explicit ShardedTensors(const std::filesystem::path& directory) : directory_(directory) {
    const auto single = directory / "model.safetensors", index = directory / "model.safetensors.index.json";
    if (std::filesystem::exists(index)) {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(read_text_file(index));
      } catch (const nlohmann::json::exception& e) {
        throw InputError(index.string() + ": not JSON (" + std::string(e.what()) + ")");
      }
      if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
        throw InputError(index.string() + ": weight_map: missing or not an object");
      for (const auto& [tensor, file] : j["weight_map"].items()) {
        if (!file.is_string()) throw InputError(index.string() + ": weight_map." + tensor + ": not a file name");
        const std::string name = file.get<std::string>();
        // A shard is a file beside the index, never a path out of the directory.
        if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos ||
            name == "." || name == "..")
          throw InputError(index.string() + ": weight_map." + tensor + ": '" + name + "' is not a file name in the directory");
        shard_of_[tensor] = name;
      }
      source_ = index.string();
    } else if (std::filesystem::exists(single)) {
      source_ = single.string();
    } else {
      throw InputError(directory.string() + ": neither model.safetensors nor model.safetensors.index.json");
    }
  }

  // The tensor, or an absent Weight when `required` is false and no file holds it.
  Weight get(const std::string& name, bool required, std::vector<std::unique_ptr<SafetensorsFile>>& files) {
    std::string file = "model.safetensors";
    if (!shard_of_.empty()) {
      const auto it = shard_of_.find(name);
      if (it == shard_of_.end()) {
        if (required) throw InputError(source_ + ": tensor " + name + ": missing");
        return {};
      }
      file = it->second;
    }
    auto opened = opened_.find(file);
    if (opened == opened_.end()) {
      files.push_back(std::make_unique<SafetensorsFile>(directory_ / file));
      opened = opened_.emplace(file, files.back().get()).first;
    }
    const TensorView* view = opened->second->find(name);
    if (!view) {
      if (required) throw InputError(opened->second->path().string() + ": tensor " + name + ": missing");
      return {};
    }
    return {name, view->dtype, view->shape, view->data};
  }

  const std::string& source() const { return source_; }

 private:
  std::filesystem::path directory_;
  std::string source_;
  std::map<std::string, std::string> shard_of_;
  std::map<std::string, SafetensorsFile*> opened_;
};

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

bool is_float_type(DType dtype) { return dtype == DType::f16 || dtype == DType::bf16 || dtype == DType::f32; }

// llama2.c's header: seven int32 (run.c's Config), the vocabulary's sign
// saying whether the classifier shares the embedding.
struct Llama2cHeader {
  int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
};

}  // namespace

Checkpoint::Checkpoint(Checkpoint&&) noexcept = default;
Checkpoint& Checkpoint::operator=(Checkpoint&&) noexcept = default;
Checkpoint::~Checkpoint() = default;

Checkpoint Checkpoint::open(const std::filesystem::path& path) {
  if (!std::filesystem::is_directory(path) && std::filesystem::is_regular_file(path)) {
    // A GGUF file is mapped, not read: its tensors point into the mapping.
    auto mapping = std::make_unique<MappedFile>(path);
    if (mapping->bytes().size() >= 4 && std::memcmp(mapping->bytes().data(), "GGUF", 4) == 0) {
      Checkpoint c;
      c.gguf_mapping_ = std::move(mapping);
      c.read_gguf(c.gguf_mapping_->bytes(), path.string());
      return c;
    }
  }
  if (!std::filesystem::is_directory(path)) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw InputError(path.string() + ": cannot read (a model is a directory with config.json, or a llama2.c .bin)");
    const std::streamoff size = in.tellg();
    std::vector<std::byte> bytes(size_t(std::max<std::streamoff>(size, 0)));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(bytes.size()));
    if (!in) throw InputError(path.string() + ": cannot read");
    return from_llama2c(std::move(bytes), path.string());
  }
  Checkpoint c;
  c.config_ = read_hf_config(path / "config.json");
  ShardedTensors tensors(path);
  c.source_ = tensors.source();
  c.embedding_ = tensors.get("model.embed_tokens.weight", true, c.files_);
  c.final_norm_ = tensors.get("model.norm.weight", true, c.files_);
  if (!c.config_.tied_embeddings) c.lm_head_ = tensors.get("lm_head.weight", true, c.files_);
  for (uint32_t l = 0; l < c.config_.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights w;
    w.attention_norm = tensors.get(p + "input_layernorm.weight", true, c.files_);
    w.wq = tensors.get(p + "self_attn.q_proj.weight", true, c.files_);
    w.wk = tensors.get(p + "self_attn.k_proj.weight", true, c.files_);
    w.wv = tensors.get(p + "self_attn.v_proj.weight", true, c.files_);
    w.wo = tensors.get(p + "self_attn.o_proj.weight", true, c.files_);
    if (c.config_.qk_norm) {
      w.q_norm = tensors.get(p + "self_attn.q_norm.weight", true, c.files_);
      w.k_norm = tensors.get(p + "self_attn.k_norm.weight", true, c.files_);
    }
    if (c.config_.qkv_bias) {
      w.bq = tensors.get(p + "self_attn.q_proj.bias", true, c.files_);
      w.bk = tensors.get(p + "self_attn.k_proj.bias", true, c.files_);
      w.bv = tensors.get(p + "self_attn.v_proj.bias", true, c.files_);
    }
    w.mlp_norm = tensors.get(p + "post_attention_layernorm.weight", true, c.files_);
    w.w_gate = tensors.get(p + "mlp.gate_proj.weight", true, c.files_);
    w.w_up = tensors.get(p + "mlp.up_proj.weight", true, c.files_);
    w.w_down = tensors.get(p + "mlp.down_proj.weight", true, c.files_);
    c.layers_.push_back(w);
  }
  c.check_shapes();
  return c;
}

uint64_t Weight::count() const {
  uint64_t n = 1;
  for (uint64_t s : shape) n *= s;
  return n;
}

Checkpoint Checkpoint::random(const std::filesystem::path& path, uint32_t seed) {
  const std::filesystem::path config_json = std::filesystem::is_directory(path) ? path / "config.json" : path;
  Checkpoint c;
  c.config_ = read_hf_config(config_json);
  c.source_ = config_json.string() + " with random weights (seed " + std::to_string(seed) + ")";
  c.random_ = true;
  c.seed_ = seed;
  c.configured_positions_ = c.config_.max_positions;
  c.config_.max_positions = std::max(c.config_.max_positions, kRandomWeightPositions);
  const ModelConfig& m = c.config_;
  const uint64_t hidden = m.hidden, q_dim = uint64_t(m.heads) * m.head_dim, kv_dim = uint64_t(m.kv_heads) * m.head_dim;
  // Norms of ones and zero biases, in one fp32 block the weights point into
  // (the heads' norms, of head_dim, after the layers').
  const uint64_t ones = hidden * (2 * uint64_t(m.layers) + 1) + (m.qk_norm ? m.head_dim : 0),
                 zeros = m.qkv_bias ? q_dim + 2 * kv_dim : 0;
  std::vector<float> values(ones + zeros, 0.0f);
  std::fill(values.begin(), values.begin() + ones, 1.0f);
  c.owned_.resize(values.size() * sizeof(float));
  std::memcpy(c.owned_.data(), values.data(), c.owned_.size());
  const std::span<const std::byte> all(c.owned_);
  auto floats = [&](const std::string& name, uint64_t first, uint64_t n) {
    return Weight{name, DType::f32, {n}, all.subspan(first * sizeof(float), n * sizeof(float))};
  };
  auto matrix = [&](const std::string& name, uint64_t rows, uint64_t columns) {
    return Weight{name, DType::f16, {rows, columns}, {}};
  };
  c.embedding_ = matrix("model.embed_tokens.weight", m.vocab, hidden);
  c.final_norm_ = floats("model.norm.weight", 0, hidden);
  if (!m.tied_embeddings) c.lm_head_ = matrix("lm_head.weight", m.vocab, hidden);
  for (uint32_t l = 0; l < m.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights w;
    w.attention_norm = floats(p + "input_layernorm.weight", hidden * (1 + 2 * uint64_t(l)), hidden);
    w.mlp_norm = floats(p + "post_attention_layernorm.weight", hidden * (2 + 2 * uint64_t(l)), hidden);
    w.wq = matrix(p + "self_attn.q_proj.weight", q_dim, hidden);
    w.wk = matrix(p + "self_attn.k_proj.weight", kv_dim, hidden);
    w.wv = matrix(p + "self_attn.v_proj.weight", kv_dim, hidden);
    w.wo = matrix(p + "self_attn.o_proj.weight", hidden, q_dim);
    if (m.qk_norm) {  // every head's norm is the same ones
      w.q_norm = floats(p + "self_attn.q_norm.weight", hidden * (2 * uint64_t(m.layers) + 1), m.head_dim);
      w.k_norm = floats(p + "self_attn.k_norm.weight", hidden * (2 * uint64_t(m.layers) + 1), m.head_dim);
    }
    if (m.qkv_bias) {  // every layer's biases are the same zeros
      w.bq = floats(p + "self_attn.q_proj.bias", ones, q_dim);
      w.bk = floats(p + "self_attn.k_proj.bias", ones + q_dim, kv_dim);
      w.bv = floats(p + "self_attn.v_proj.bias", ones + q_dim + kv_dim, kv_dim);
    }
    w.w_gate = matrix(p + "mlp.gate_proj.weight", m.intermediate, hidden);
    w.w_up = matrix(p + "mlp.up_proj.weight", m.intermediate, hidden);
    w.w_down = matrix(p + "mlp.down_proj.weight", hidden, m.intermediate);
    c.layers_.push_back(w);
  }
  c.check_shapes();
  return c;
}

Checkpoint Checkpoint::from_gguf(std::vector<std::byte> bytes, const std::string& source) {
  Checkpoint c;
  c.owned_ = std::move(bytes);  // the tensors point into it
  c.read_gguf(c.owned_, source);
  return c;
}

// A block-quantized tensor's values as fp16 (each rounded once from ggml's
// own dequantization, formats::dequantize), owned by the checkpoint: the
// engine's kernels take 16-bit weights, and keeping the blocks on the GPU is
// not done yet.
std::span<const std::byte> Checkpoint::widen(const GgufTensor& t) {
  const formats::BlockLayout layout = *formats::block_layout(uint32_t(t.type));
  uint64_t count = 1;
  for (uint64_t d : t.dims) count *= d;
  std::vector<std::byte>& out = widened_.emplace_back(count * 2);
  const uint64_t row = t.dims[0], row_bytes = row / layout.elements * layout.bytes, rows = count / row;
  // Rows in slices a thread: an 8B model's 2.5 ns a value is 20 s on one core.
  const uint64_t threads = std::clamp<uint64_t>(std::thread::hardware_concurrency(), 1, std::max<uint64_t>(1, rows / 16));
  auto widen_rows = [&](uint64_t first, uint64_t end) {
    std::vector<float> values(row);
    for (uint64_t r = first; r < end; ++r) {
      formats::dequantize(t.type, t.data.subspan(r * row_bytes, row_bytes), values);
      for (uint64_t i = 0; i < row; ++i) {
        const uint16_t h = float_to_half(values[i]);
        std::memcpy(out.data() + (r * row + i) * 2, &h, 2);
      }
    }
  };
  {
    std::vector<std::jthread> workers;
    for (uint64_t k = 1; k < threads; ++k) workers.emplace_back(widen_rows, rows * k / threads, rows * (k + 1) / threads);
    widen_rows(0, rows / threads);
  }
  return out;
}

void Checkpoint::read_gguf(std::span<const std::byte> bytes, const std::string& source) {
  Checkpoint& c = *this;
  c.source_ = source;
  c.gguf_ = true;
  const GgufFile file = parse_gguf(bytes, source);
  c.config_ = gguf_model_config(file, source);
  c.embedded_tokenizer_ = gguf_tokenizer_json(file, source);
  if (file.metadata.contains("tokenizer.chat_template") && file.metadata["tokenizer.chat_template"].is_string())
    c.embedded_chat_template_ = file.metadata["tokenizer.chat_template"].get<std::string>();
  std::map<std::string, const GgufTensor*> by_name;
  for (const GgufTensor& t : file.tensors) by_name[t.name] = &t;
  auto get = [&](const std::string& name) {
    const auto it = by_name.find(name);
    if (it == by_name.end()) throw InputError(source + ": GGUF tensor " + name + " missing");
    const GgufTensor& t = *it->second;
    std::vector<uint64_t> shape(t.dims.rbegin(), t.dims.rend());  // GGUF lists the fastest first
    if (t.type == GgufType::f16) return Weight{name, DType::f16, shape, t.data};
    if (t.type == GgufType::bf16) return Weight{name, DType::bf16, shape, t.data};
    if (t.type == GgufType::f32) return Weight{name, DType::f32, shape, t.data};
    return Weight{name, DType::f16, shape, c.widen(t)};
  };
  c.embedding_ = get("token_embd.weight");
  c.final_norm_ = get("output_norm.weight");
  if (!c.config_.tied_embeddings) c.lm_head_ = get("output.weight");
  for (uint32_t l = 0; l < c.config_.layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights w;
    w.attention_norm = get(p + "attn_norm.weight");
    w.wq = get(p + "attn_q.weight");
    w.wk = get(p + "attn_k.weight");
    w.wv = get(p + "attn_v.weight");
    w.wo = get(p + "attn_output.weight");
    w.mlp_norm = get(p + "ffn_norm.weight");
    w.w_gate = get(p + "ffn_gate.weight");
    w.w_up = get(p + "ffn_up.weight");
    w.w_down = get(p + "ffn_down.weight");
    c.layers_.push_back(w);
  }
  c.check_shapes();
}

Checkpoint Checkpoint::from_llama2c(std::vector<std::byte> bytes, const std::string& source) {
  Llama2cHeader h;
  if (bytes.size() < sizeof h) throw InputError(source + ": shorter than a llama2.c header (28 bytes)");
  std::memcpy(&h, bytes.data(), sizeof h);
  auto field = [&](const char* name, int64_t value, int64_t lowest, int64_t highest) {
    if (value < lowest || value > highest)
      throw InputError(source + ": header " + name + " = " + std::to_string(value) + " is outside [" +
                       std::to_string(lowest) + ", " + std::to_string(highest) + "]");
    return uint32_t(value);
  };
  Checkpoint c;
  c.source_ = source;
  ModelConfig& m = c.config_;
  m.architecture = "llama2.c";
  m.hidden = field("dim", h.dim, 8, 1 << 16);
  m.intermediate = field("hidden_dim", h.hidden_dim, 1, 1 << 20);
  m.layers = field("n_layers", h.n_layers, 1, 1024);
  m.heads = field("n_heads", h.n_heads, 1, 1024);
  m.kv_heads = field("n_kv_heads", h.n_kv_heads, 1, m.heads);
  m.vocab = field("vocab_size", std::abs(int64_t(h.vocab_size)), 2, 1 << 24);
  m.max_positions = field("seq_len", h.seq_len, 1, 1 << 24);
  if (m.hidden % m.heads) throw InputError(source + ": header dim is not a multiple of n_heads");
  if (m.heads % m.kv_heads) throw InputError(source + ": header n_kv_heads does not divide n_heads");
  m.head_dim = m.hidden / m.heads;
  if (m.head_dim % 8) throw InputError(source + ": head size " + std::to_string(m.head_dim) + " is not a multiple of 8");
  m.tied_embeddings = h.vocab_size > 0;
  m.rope_pairs = RopePairs::interleaved;
  m.rms_eps = 1e-5;
  // run.c: freq = 1 / powf(10000, 2i / head_size), in float.
  for (uint32_t i = 0; i < m.head_dim / 2; ++i)
    m.rope_inverse_frequencies.push_back(double(1.0f / std::pow(10000.0f, float(2 * i) / float(m.head_dim))));
  // llama2.c starts a sequence with token 1 and ends generation when it comes again.
  m.bos_token = 1;
  m.eos_tokens = {1};

  // Every size from the header, in 64 bits, against the file's own size before anything is sized by it.
  const uint64_t dim = m.hidden, hidden = m.intermediate, layers = m.layers, vocab = m.vocab;
  const uint64_t kv_dim = uint64_t(m.kv_heads) * m.head_dim;
  const uint64_t floats = vocab * dim + layers * (2 * dim + dim * dim + 2 * dim * kv_dim + dim * dim + 3 * dim * hidden) +
                          dim + uint64_t(m.max_positions) * m.head_dim + (m.tied_embeddings ? 0 : vocab * dim);
  if (bytes.size() != sizeof h + floats * 4)
    throw InputError(source + ": " + std::to_string(bytes.size()) + " bytes, but its header describes " +
                     std::to_string(sizeof h + floats * 4));
  c.owned_ = std::move(bytes);
  c.matrix_dtype_ = DType::f32;
  uint64_t offset = sizeof h;
  auto take = [&](const std::string& name, std::vector<uint64_t> shape) {
    uint64_t count = 1;
    for (uint64_t s : shape) count *= s;
    Weight w{name, DType::f32, std::move(shape), std::span<const std::byte>(c.owned_).subspan(offset, count * 4)};
    offset += count * 4;
    return w;
  };
  // run.c's memory_map_weights order: each kind for every layer, then the next kind.
  c.embedding_ = take("token_embedding_table", {vocab, dim});
  c.layers_.resize(m.layers);
  auto per_layer = [&](const char* name, Weight LayerWeights::*member, std::vector<uint64_t> shape) {
    for (uint32_t l = 0; l < m.layers; ++l) c.layers_[l].*member = take("layers." + std::to_string(l) + "." + name, shape);
  };
  per_layer("rms_att_weight", &LayerWeights::attention_norm, {dim});
  per_layer("wq", &LayerWeights::wq, {dim, dim});
  per_layer("wk", &LayerWeights::wk, {kv_dim, dim});
  per_layer("wv", &LayerWeights::wv, {kv_dim, dim});
  per_layer("wo", &LayerWeights::wo, {dim, dim});
  per_layer("rms_ffn_weight", &LayerWeights::mlp_norm, {dim});
  per_layer("w1", &LayerWeights::w_gate, {hidden, dim});
  per_layer("w2", &LayerWeights::w_down, {dim, hidden});
  per_layer("w3", &LayerWeights::w_up, {hidden, dim});
  c.final_norm_ = take("rms_final_weight", {dim});
  offset += uint64_t(m.max_positions) * m.head_dim * 4;  // the old RoPE tables, unused
  if (!m.tied_embeddings) c.lm_head_ = take("wcls", {vocab, dim});
  c.check_shapes();
  return c;
}

void Checkpoint::check_shapes() {
  const ModelConfig& m = config_;
  const uint64_t hidden = m.hidden, q_dim = uint64_t(m.heads) * m.head_dim, kv_dim = uint64_t(m.kv_heads) * m.head_dim;
  matrix_dtype_ = embedding_.dtype;
  if (matrix_dtype_ != DType::f16 && matrix_dtype_ != DType::bf16 && matrix_dtype_ != DType::f32)
    throw InputError(source_ + ": tensor " + embedding_.name + ": dtype " + dtype_name(matrix_dtype_) + " (F16, BF16 or F32)");
  auto check = [&](const Weight& w, std::vector<uint64_t> shape, bool matrix) {
    if (w.shape != shape)
      throw InputError(source_ + ": tensor " + w.name + ": shape " + shape_text(w.shape) + ", the config says " + shape_text(shape));
    if (matrix && w.dtype != matrix_dtype_)
      throw InputError(source_ + ": tensor " + w.name + ": dtype " + dtype_name(w.dtype) + ", the embedding's is " +
                       dtype_name(matrix_dtype_));
    if (!is_float_type(w.dtype)) throw InputError(source_ + ": tensor " + w.name + ": dtype " + dtype_name(w.dtype));
  };
  check(embedding_, {m.vocab, hidden}, true);
  check(final_norm_, {hidden}, false);
  if (lm_head_.present()) check(lm_head_, {m.vocab, hidden}, true);
  for (const LayerWeights& w : layers_) {
    check(w.attention_norm, {hidden}, false);
    check(w.wq, {q_dim, hidden}, true);
    check(w.wk, {kv_dim, hidden}, true);
    check(w.wv, {kv_dim, hidden}, true);
    check(w.wo, {hidden, q_dim}, true);
    if (m.qk_norm) {
      check(w.q_norm, {m.head_dim}, false);
      check(w.k_norm, {m.head_dim}, false);
    }
    if (w.bq.present()) {
      check(w.bq, {q_dim}, false);
      check(w.bk, {kv_dim}, false);
      check(w.bv, {kv_dim}, false);
    }
    check(w.mlp_norm, {hidden}, false);
    check(w.w_gate, {m.intermediate, hidden}, true);
    check(w.w_up, {m.intermediate, hidden}, true);
    check(w.w_down, {hidden, m.intermediate}, true);
  }
}

std::vector<float> to_floats(const Weight& weight) {
  const size_t count = weight.data.size() / dtype_size(weight.dtype);
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i) {
    if (weight.dtype == DType::f32) {
      std::memcpy(&out[i], weight.data.data() + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, weight.data.data() + 2 * i, 2);
      out[i] = weight.dtype == DType::f16 ? half_to_float(h) : bf16_to_float(h);
    }
  }
  return out;
}

}  // namespace kv::model
