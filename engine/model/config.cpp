#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numbers>
#include <sstream>

#include "base/error.h"
#include "model/files.h"

namespace kv::model {
namespace {

using nlohmann::json;

// Reads one field of config.json with its type checked: a one-line error names
// the file and the field.
class Fields {
 public:
  Fields(const json& j, std::string source) : j_(j), source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(source_ + ": " + field + ": " + what);
  }
  bool has(const std::string& field) const { return j_.contains(field) && !j_[field].is_null(); }
  const json& get(const std::string& field) const {
    if (!has(field)) fail(field, "missing");
    return j_[field];
  }
  uint32_t count(const std::string& field, uint32_t lowest, uint32_t highest) const {
    const json& v = get(field);
    if (!v.is_number_integer() || v.get<int64_t>() < lowest || v.get<int64_t>() > highest)
      fail(field, "must be an integer in [" + std::to_string(lowest) + ", " + std::to_string(highest) + "], not " +
                      v.dump());
    return uint32_t(v.get<int64_t>());
  }
  double number(const json& v, const std::string& field, double lowest) const {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= lowest)
      fail(field, "must be a number above " + std::to_string(lowest) + ", not " + v.dump());
    return v.get<double>();
  }
  double number(const std::string& field, double lowest) const { return number(get(field), field, lowest); }
  bool flag(const std::string& field, bool fallback) const {
    if (!has(field)) return fallback;
    if (!j_[field].is_boolean()) fail(field, "must be true or false, not " + j_[field].dump());
    return j_[field].get<bool>();
  }
  std::string text(const std::string& field, const std::string& fallback) const {
    if (!has(field)) return fallback;
    if (!j_[field].is_string()) fail(field, "must be a string, not " + j_[field].dump());
    return j_[field].get<std::string>();
  }
  std::vector<int32_t> token_ids(const std::string& field, uint32_t vocab) const {
    if (!has(field)) return {};
    const json& v = j_[field];
    std::vector<int32_t> ids;
    for (const json& id : v.is_array() ? v : json::array({v})) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= vocab)
        fail(field, "must be token ids below the vocabulary size " + std::to_string(vocab) + ", not " + v.dump());
      ids.push_back(int32_t(id.get<int64_t>()));
    }
    return ids;
  }

 private:
  const json& j_;
  std::string source_;
};

struct RopeScaling {
  std::vector<double> inverse_frequencies;
  double attention_factor = 1.0;
};

// YaRN (transformers' _compute_yarn_parameters, float32 where it computes in
// float32): the interpolated frequencies 1 / (factor theta^(2i/d)) and the
// original ones blended by a ramp over the pairs whose wavelengths lie between
// beta_fast and beta_slow rotations in the original context; cos and sin
// scaled by 0.1 ln(factor) + 1 (or the mscale ratio, or attention_factor).
RopeScaling yarn_frequencies(const Fields& f, const json& rope, double theta, uint32_t head_dim, uint32_t max_positions) {
  auto optional = [&](const char* name, double fallback) {
    return rope.contains(name) && !rope[name].is_null() ? f.number(rope[name], std::string("rope_parameters.") + name, 0)
                                                        : fallback;
  };
  if (optional("partial_rotary_factor", 1.0) != 1.0)
    f.fail("rope_parameters.partial_rotary_factor", "RoPE over part of a head is not supported");
  const double original = optional("original_max_position_embeddings", max_positions);
  const double factor = optional("factor", max_positions / original);
  if (!(factor > 0)) f.fail("rope_parameters.factor", "must be positive");
  auto get_mscale = [](double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; };
  const double mscale = optional("mscale", 0), mscale_all_dim = optional("mscale_all_dim", 0);
  double attention = mscale != 0 && mscale_all_dim != 0 ? get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
                                                         : get_mscale(factor, 1);
  attention = optional("attention_factor", attention);
  // transformers takes `or 32` / `or 1`: a zero falls back too.
  const double beta_fast = optional("beta_fast", 0) != 0 ? optional("beta_fast", 0) : 32;
  const double beta_slow = optional("beta_slow", 0) != 0 ? optional("beta_slow", 0) : 1;
  const bool truncate = !rope.contains("truncate") || rope["truncate"].is_null() || rope["truncate"] == true;
  const double dim = head_dim;
  auto correction_dim = [&](double rotations) {
    return dim * std::log(original / (rotations * 2 * std::numbers::pi)) / (2 * std::log(theta));
  };
  double low = correction_dim(beta_fast), high = correction_dim(beta_slow);
  if (truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, dim - 1);
  if (low == high) high += 0.001;  // transformers' guard against a zero-width ramp
  RopeScaling r;
  r.attention_factor = attention;
  for (uint32_t i = 0; i < head_dim / 2; ++i) {
    const float position_frequency = std::pow(float(theta), float(2 * i) / float(head_dim));
    const float extrapolation = 1.0f / position_frequency, interpolation = 1.0f / (float(factor) * position_frequency);
    const float ramp = std::clamp((float(i) - float(low)) / (float(high) - float(low)), 0.0f, 1.0f);
    const float keep = 1.0f - ramp;  // the original frequency's share
    r.inverse_frequencies.push_back(double(interpolation * (1.0f - keep) + extrapolation * keep));
  }
  return r;
}

// RoPE's inverse frequencies theta^(-2i/d), in float32 as transformers computes
// them, then scaled as `rope_type` says (transformers' rope initialisation
// functions for "default", "linear", "llama3" and "yarn").
RopeScaling rope_frequencies(const Fields& f, const json& rope, uint32_t head_dim, uint32_t max_positions) {
  // Absent everywhere (Llama 2's config.json): transformers' default, 10000.
  const double theta = rope.contains("rope_theta") ? f.number(rope["rope_theta"], "rope_parameters.rope_theta", 0)
                       : f.has("rope_theta")       ? f.number("rope_theta", 0)
                                                   : 10000.0;
  std::vector<double> inverse(head_dim / 2);
  for (uint32_t i = 0; i < head_dim / 2; ++i)
    inverse[i] = double(1.0f / std::pow(float(theta), float(2 * i) / float(head_dim)));
  const std::string type = rope.contains("rope_type") && rope["rope_type"].is_string() ? rope["rope_type"].get<std::string>()
                           : rope.contains("type") && rope["type"].is_string()       ? rope["type"].get<std::string>()
                                                                                        : "default";
  auto parameter = [&](const char* name) {
    if (!rope.contains(name)) f.fail(std::string("rope_parameters.") + name, "missing for rope_type " + type);
    return f.number(rope[name], std::string("rope_parameters.") + name, 0);
  };
  if (type == "default") return {inverse};
  if (type == "linear") {
    const double factor = parameter("factor");
    for (double& x : inverse) x /= factor;
    return {inverse};
  }
  if (type == "yarn") return yarn_frequencies(f, rope, theta, head_dim, max_positions);
  if (type == "llama3") {
    const double factor = parameter("factor"), low = parameter("low_freq_factor"), high = parameter("high_freq_factor");
    const double original = parameter("original_max_position_embeddings");
    if (high <= low) f.fail("rope_parameters.high_freq_factor", "must exceed low_freq_factor");
    for (double& x : inverse) {
      const double wavelength = 2 * std::numbers::pi / x;
      if (wavelength > original / low) {
        x /= factor;
      } else if (wavelength >= original / high) {
        const double smooth = (original / wavelength - low) / (high - low);
        x = (1 - smooth) * x / factor + smooth * x;
      }
    }
    return {inverse};
  }
  if (type == "dynamic")  // transformers recomputes its frequencies from each forward pass's length
    f.fail("rope_parameters.rope_type",
           "'dynamic' is not supported: its frequencies follow each forward pass's length, so a run's keys would depend on "
           "how its prompt is chunked (default, linear, llama3, yarn)");
  f.fail("rope_parameters.rope_type", "'" + type + "' is not supported (default, linear, llama3, yarn)");
}

}  // namespace

ModelConfig parse_hf_config(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(source + ": not JSON (" + std::string(e.what()) + ")");
  }
  if (!j.is_object()) throw InputError(source + ": not a JSON object");
  const Fields f(j, source);
  ModelConfig c;
  const json& architectures = f.get("architectures");
  if (!architectures.is_array() || architectures.size() != 1 || !architectures[0].is_string())
    f.fail("architectures", "must list one architecture, not " + architectures.dump());
  c.architecture = architectures[0].get<std::string>();
  const bool llama = c.architecture == "LlamaForCausalLM", mistral = c.architecture == "MistralForCausalLM",
             qwen2 = c.architecture == "Qwen2ForCausalLM", qwen3 = c.architecture == "Qwen3ForCausalLM";
  if (!llama && !mistral && !qwen2 && !qwen3)
    f.fail("architectures", "'" + c.architecture +
                                "' is not supported (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM)");
  const std::string activation = f.text("hidden_act", "silu");
  if (activation != "silu") f.fail("hidden_act", "'" + activation + "' is not supported (silu)");
  if (f.flag("mlp_bias", false)) f.fail("mlp_bias", "MLP biases are not supported");

  c.hidden = f.count("hidden_size", 8, 1u << 16);
  c.layers = f.count("num_hidden_layers", 1, 1024);
  c.heads = f.count("num_attention_heads", 1, 1024);
  c.kv_heads = f.has("num_key_value_heads") ? f.count("num_key_value_heads", 1, c.heads) : c.heads;
  if (c.heads % c.kv_heads) f.fail("num_key_value_heads", "must divide num_attention_heads");
  c.head_dim = f.has("head_dim") ? f.count("head_dim", 8, 512) : c.hidden / c.heads;
  if (c.head_dim % 8 != 0 || c.head_dim > 512) f.fail("head_dim", "must be a multiple of 8 up to 512, not " + std::to_string(c.head_dim));
  c.intermediate = f.count("intermediate_size", 1, 1u << 20);
  c.vocab = f.count("vocab_size", 2, 1u << 24);
  c.max_positions = f.count("max_position_embeddings", 1, 1u << 24);
  c.rms_eps = f.number("rms_norm_eps", 0);
  c.tied_embeddings = f.flag("tie_word_embeddings", false);
  // Qwen2's q, k and v projections always carry biases, Qwen3's with
  // attention_bias (its o projection's too, which kvscope does not read);
  // Llama's not.
  c.qkv_bias = qwen2;
  c.qk_norm = qwen3;
  if ((llama || qwen3) && f.flag("attention_bias", false))
    f.fail("attention_bias", "attention biases are not supported for " + c.architecture);
  if (mistral || ((qwen2 || qwen3) && f.flag("use_sliding_window", false)))
    c.sliding_window = f.has("sliding_window") ? f.count("sliding_window", 1, 1u << 30) : 0;
  const json rope = f.has("rope_parameters") ? f.get("rope_parameters") : f.has("rope_scaling") ? f.get("rope_scaling") : json::object();
  if (!rope.is_object()) f.fail("rope_parameters", "must be an object, not " + rope.dump());
  const RopeScaling scaling = rope_frequencies(f, rope, c.head_dim, c.max_positions);
  c.rope_inverse_frequencies = scaling.inverse_frequencies;
  c.rope_attention_factor = scaling.attention_factor;
  const std::vector<int32_t> bos = f.token_ids("bos_token_id", c.vocab);
  c.bos_token = bos.empty() ? -1 : bos.front();
  c.eos_tokens = f.token_ids("eos_token_id", c.vocab);
  return c;
}

ModelConfig read_hf_config(const std::filesystem::path& config_json) {
  return parse_hf_config(read_text_file(config_json), config_json.string());
}

void check_sequence_length(const ModelConfig& config, uint64_t tokens) {
  if (tokens > config.max_positions)
    throw InputError(std::to_string(tokens) + " tokens are past the model's context of " +
                     std::to_string(config.max_positions) + " (prompt plus steps)");
  if (config.sliding_window && tokens > config.sliding_window)
    throw InputError(std::to_string(tokens) + " tokens are past the model's sliding window of " +
                     std::to_string(config.sliding_window) +
                     ": kvscope attends over every key, so it cannot run this model faithfully at this length");
}

}  // namespace kv::model
