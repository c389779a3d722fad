#include "model/checkpoint.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "base/half.h"
#include "formats/ggml_quantize.h"
#include "model/files.h"
#include "formats/gguf.h"
#include "model/gguf_model.h"

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

// The type of a matrix under `type`: its role ("v", "down", "head", or any
// other), its layer, and whether its rows are whole blocks of 256 (for a K
// type; stand_in: llama.cpp's 32-value replacement where not, else none).
std::optional<formats::GgmlType> matrix_type(const WeightType& type, const std::string& role, uint32_t layer, uint32_t layers,
                                             uint64_t row, bool stand_in) {
  formats::GgmlType t = type.blocks;
  if (type.k_m_mix) {
    const uint32_t eighth = layers / 8;  // llama.cpp's use_more_bits
    const bool more_bits = layer < eighth || layer >= 7 * layers / 8 || (layer - eighth) % 3 == 2;
    if (role == "head" || ((role == "v" || role == "down") && more_bits)) t = formats::GgmlType::q6_k;
  }
  const formats::BlockLayout layout = *formats::block_layout(uint32_t(t));
  if (row % layout.elements == 0) return t;
  if (!stand_in) return std::nullopt;
  switch (t) {
    case formats::GgmlType::q4_k: t = formats::GgmlType::q5_0; break;
    case formats::GgmlType::q5_k: t = formats::GgmlType::q5_1; break;
    case formats::GgmlType::q6_k: t = formats::GgmlType::q8_0; break;
    case formats::GgmlType::q2_k:
    case formats::GgmlType::q3_k: t = formats::GgmlType::q4_0; break;
    default: return std::nullopt;
  }
  return row % 32 == 0 ? std::optional(t) : std::nullopt;
}

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

std::string WeightType::name() const {
  return std::string(formats::block_layout(uint32_t(blocks))->name) + (k_m_mix ? "_M" : "");
}

std::optional<WeightType> parse_weight_type(const std::string& text) {
  std::string upper = text;
  for (char& ch : upper) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  if (upper == "F16") return std::nullopt;
  const bool mix = upper == "Q4_K_M" || upper == "Q5_K_M";
  const std::string base = mix ? upper.substr(0, 4) : upper;
  for (uint32_t number = 2; number < 15; ++number) {
    const auto layout = formats::block_layout(number);
    if (layout && layout->elements > 1 && base == layout->name) return WeightType{layout->type, mix};
  }
  throw InputError("--weight-type: '" + text + "' is none of f16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, "
                   "q4_k_m, q5_k_m");
}

void Checkpoint::quantize(const WeightType& type) {
  if (random_) throw std::logic_error("Checkpoint::quantize of random weights: Checkpoint::random draws them as blocks");
  for (const Weight* w : matrices())
    if (w->blocks)
      throw InputError("--weight-type " + type.name() + ": " + source_ + " is quantized already (" + matrix_types() + ")");
  const uint32_t layers = config_.layers;
  auto convert = [&](Weight& w, const std::string& role, uint32_t layer) {
    const auto t = matrix_type(type, role, layer, layers, w.shape.back(), true);
    if (!t)
      throw InputError("--weight-type " + type.name() + ": " + w.name + "'s rows of " + std::to_string(w.shape.back()) +
                       " values are not whole blocks of 32");
    const std::vector<float> values = to_floats(w);
    converted_.push_back(formats::quantize(*t, values));
    w.data = converted_.back();
    w.dtype = DType::f16;
    w.blocks = *t;
  };
  // The embedding is the LM head where they are tied (llama.cpp's token_embd then takes the head's type).
  convert(embedding_, tied() ? "head" : "embedding", 0);
  if (!tied()) convert(lm_head_, "head", 0);
  for (uint32_t l = 0; l < layers; ++l) {
    LayerWeights& w = layers_[l];
    convert(w.wq, "q", l);
    convert(w.wk, "k", l);
    convert(w.wv, "v", l);
    convert(w.wo, "o", l);
    convert(w.w_gate, "gate", l);
    convert(w.w_up, "up", l);
    convert(w.w_down, "down", l);
  }
  source_ += " as " + type.name();
  check_shapes();
}

uint64_t Weight::bytes() const {
  if (!blocks) return count() * dtype_size(dtype);
  const formats::BlockLayout layout = *formats::block_layout(uint32_t(*blocks));
  return count() / layout.elements * layout.bytes;
}

std::vector<const Weight*> Checkpoint::matrices() const {
  std::vector<const Weight*> all{&embedding_};
  if (lm_head_.present()) all.push_back(&lm_head_);
  for (const LayerWeights& w : layers_)
    for (const Weight* m : {&w.wq, &w.wk, &w.wv, &w.wo, &w.w_gate, &w.w_up, &w.w_down}) all.push_back(m);
  return all;
}

uint64_t Checkpoint::matrix_bytes() const {
  uint64_t total = 0;
  for (const Weight* w : matrices()) total += w->bytes();
  return total;
}

std::string Checkpoint::matrix_types() const {
  std::map<std::string, uint32_t> counts;
  for (const Weight* w : matrices())
    ++counts[w->blocks ? formats::block_layout(uint32_t(*w->blocks))->name : dtype_name(w->dtype)];
  std::string text;
  for (const auto& [name, n] : counts) text += (text.empty() ? "" : ", ") + name + (counts.size() > 1 ? " x " + std::to_string(n) : "");
  return text;
}

Checkpoint Checkpoint::random(const std::filesystem::path& path, uint32_t seed, const std::optional<WeightType>& blocks) {
  const std::filesystem::path config_json = std::filesystem::is_directory(path) ? path / "config.json" : path;
  Checkpoint c;
  c.config_ = read_hf_config(config_json);
  c.source_ = config_json.string() + " with random weights (seed " + std::to_string(seed) +
              (blocks ? ", " + blocks->name() : std::string()) + ")";
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
  // Random blocks take no stand-in type: a shape is timed as it is or refused.
  auto matrix = [&](const std::string& name, uint64_t rows, uint64_t columns, const std::string& role = "",
                    uint32_t layer = 0) {
    std::optional<formats::GgmlType> t;
    if (blocks) {
      t = matrix_type(*blocks, role, layer, c.config_.layers, columns, false);
      if (!t)
        throw InputError("--weight-type " + blocks->name() + ": " + name + "'s rows of " + std::to_string(columns) +
                         " values are not whole blocks of " + std::to_string(formats::block_layout(uint32_t(blocks->blocks))->elements));
    }
    return Weight{name, DType::f16, {rows, columns}, {}, t};
  };
  c.embedding_ = matrix("model.embed_tokens.weight", m.vocab, hidden, m.tied_embeddings ? "head" : "embedding");
  c.final_norm_ = floats("model.norm.weight", 0, hidden);
  if (!m.tied_embeddings) c.lm_head_ = matrix("lm_head.weight", m.vocab, hidden, "head");
  for (uint32_t l = 0; l < m.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights w;
    w.attention_norm = floats(p + "input_layernorm.weight", hidden * (1 + 2 * uint64_t(l)), hidden);
    w.mlp_norm = floats(p + "post_attention_layernorm.weight", hidden * (2 + 2 * uint64_t(l)), hidden);
    w.wq = matrix(p + "self_attn.q_proj.weight", q_dim, hidden, "q", l);
    w.wk = matrix(p + "self_attn.k_proj.weight", kv_dim, hidden, "k", l);
    w.wv = matrix(p + "self_attn.v_proj.weight", kv_dim, hidden, "v", l);
    w.wo = matrix(p + "self_attn.o_proj.weight", hidden, q_dim, "o", l);
    if (m.qk_norm) {  // every head's norm is the same ones
      w.q_norm = floats(p + "self_attn.q_norm.weight", hidden * (2 * uint64_t(m.layers) + 1), m.head_dim);
      w.k_norm = floats(p + "self_attn.k_norm.weight", hidden * (2 * uint64_t(m.layers) + 1), m.head_dim);
    }
    if (m.qkv_bias) {  // every layer's biases are the same zeros
      w.bq = floats(p + "self_attn.q_proj.bias", ones, q_dim);
      w.bk = floats(p + "self_attn.k_proj.bias", ones + q_dim, kv_dim);
      w.bv = floats(p + "self_attn.v_proj.bias", ones + q_dim + kv_dim, kv_dim);
    }
    w.w_gate = matrix(p + "mlp.gate_proj.weight", m.intermediate, hidden, "gate", l);
    w.w_up = matrix(p + "mlp.up_proj.weight", m.intermediate, hidden, "up", l);
    w.w_down = matrix(p + "mlp.down_proj.weight", hidden, m.intermediate, "down", l);
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

// A plain matrix of a quantized file as fp16, the type the blocks' values
// are computed in (a file may keep a few matrices in F32 or F16 beside its
// blocks: llama.cpp's quantizer leaves what it cannot block).
void Checkpoint::to_half(Weight& weight) {
  const std::vector<float> values = to_floats(weight);
  std::vector<std::byte>& out = converted_.emplace_back(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t h = float_to_half(values[i]);
    std::memcpy(out.data() + i * 2, &h, 2);
  }
  weight.dtype = DType::f16;
  weight.data = out;
}

void Checkpoint::read_gguf(std::span<const std::byte> bytes, const std::string& source) {
  Checkpoint& c = *this;
  c.source_ = source;
  c.gguf_ = true;
  const formats::GgufFile file = formats::parse_gguf(bytes, source);
  c.config_ = gguf_model_config(file, source);
  c.embedded_tokenizer_ = gguf_tokenizer_json(file, source);
  if (file.metadata.contains("tokenizer.chat_template") && file.metadata["tokenizer.chat_template"].is_string())
    c.embedded_chat_template_ = file.metadata["tokenizer.chat_template"].get<std::string>();
  std::map<std::string, const formats::GgufTensor*> by_name;
  for (const formats::GgufTensor& t : file.tensors) by_name[t.name] = &t;
  auto get = [&](const std::string& name) {
    const auto it = by_name.find(name);
    if (it == by_name.end()) throw InputError(source + ": GGUF tensor " + name + " missing");
    const formats::GgufTensor& t = *it->second;
    std::vector<uint64_t> shape(t.dims.rbegin(), t.dims.rend());  // GGUF lists the fastest first
    if (t.type == formats::GgmlType::f16) return Weight{name, DType::f16, shape, t.data};
    if (t.type == formats::GgmlType::bf16) return Weight{name, DType::bf16, shape, t.data};
    if (t.type == formats::GgmlType::f32) return Weight{name, DType::f32, shape, t.data};
    return Weight{name, DType::f16, shape, t.data, t.type};
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
  const std::vector<const Weight*> all = c.matrices();
  if (std::any_of(all.begin(), all.end(), [](const Weight* w) { return w->blocks.has_value(); }))
    for (const Weight* w : all)
      if (!w->blocks && w->dtype != DType::f16) c.to_half(const_cast<Weight&>(*w));
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
  if (weight.blocks) {
    if (weight.data.empty()) return {};  // random blocks live on the device only, as random fp16 matrices do
    std::vector<float> out(weight.count());
    formats::dequantize(*weight.blocks, weight.data, out);
    return out;
  }
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
