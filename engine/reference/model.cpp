#include "reference/model.h"

#include <cmath>
#include <optional>

#include "base/error.h"
#include "base/half.h"

namespace kv::reference {
namespace {

using Vector = std::vector<double>;
using model::Checkpoint;
using model::ModelConfig;
using model::Weight;

Vector widen(const Weight& w) {
  const std::vector<float> f = model::to_floats(w);
  return Vector(f.begin(), f.end());
}

// y = W x (+ b) for W [n_out, n_in].
Vector linear(const Vector& w, const Vector& x, const Vector* bias = nullptr) {
  const size_t n_in = x.size(), n_out = w.size() / n_in;
  Vector y(n_out, 0.0);
  for (size_t r = 0; r < n_out; ++r) {
    double s = bias ? (*bias)[r] : 0.0;
    for (size_t k = 0; k < n_in; ++k) s += w[r * n_in + k] * x[k];
    y[r] = s;
  }
  return y;
}

Vector rms_norm(const Vector& x, const Vector& weight, double eps) {
  double squares = 0;
  for (double v : x) squares += v * v;
  const double inverse = 1.0 / std::sqrt(squares / double(x.size()) + eps);
  Vector y(x.size());
  for (size_t c = 0; c < x.size(); ++c) y[c] = x[c] * inverse * weight[c];
  return y;
}

double stored(double x, DType dtype) {
  if (dtype == DType::f16) return half_to_float(float_to_half(float(x)));
  if (dtype == DType::bf16) return bf16_to_float(float_to_bf16(float(x)));
  return float(x);
}

// RoPE on each head of `x` [heads * d] at `position`.
void rotate(Vector& x, uint32_t heads, const ModelConfig& c, uint32_t position) {
  const uint32_t d = c.head_dim;
  for (uint32_t h = 0; h < heads; ++h)
    for (uint32_t i = 0; i < d / 2; ++i) {
      const double angle = double(float(position) * float(c.rope_inverse_frequencies[i]));
      const bool interleaved = c.rope_pairs == model::RopePairs::interleaved;
      const size_t a = h * d + (interleaved ? 2 * i : i), b = h * d + (interleaved ? 2 * i + 1 : i + d / 2);
      const double xa = x[a], xb = x[b], cos = std::cos(angle) * c.rope_attention_factor,
                   sin = std::sin(angle) * c.rope_attention_factor;
      x[a] = xa * cos - xb * sin;
      x[b] = xa * sin + xb * cos;
    }
}

struct Layer {
  Vector attention_norm, wq, wk, wv, wo, bq, bk, bv, mlp_norm, w_gate, w_up, w_down;
  Vector q_norm, k_norm;  // Qwen3; empty otherwise
  std::vector<Vector> keys, values;  // per position, [G * d]
};

// Qwen3's RMSNorm of each head's d channels of x ([heads * d]), in place.
void norm_heads(Vector& x, const Vector& weight, uint32_t heads, double eps) {
  const size_t d = weight.size();
  for (uint32_t h = 0; h < heads; ++h) {
    const Vector head(x.begin() + long(h * d), x.begin() + long((h + 1) * d));
    const Vector normed = rms_norm(head, weight, eps);
    std::copy(normed.begin(), normed.end(), x.begin() + long(h * d));
  }
}

// A layer's q, k and v so far as the selection references take them: the
// first `tokens` positions, in float (the stored values are exact in float).
HostLayer host_layer_so_far(const ModelConfig& c, const std::vector<Vector>& queries, const Layer& l, double scale) {
  const uint32_t T = uint32_t(l.keys.size()), d = c.head_dim;
  HostLayer h{{c.heads, c.kv_heads, T, d}, scale, std::vector<float>(size_t(c.heads) * T * d),
              std::vector<float>(size_t(c.kv_heads) * T * d), std::vector<float>(size_t(c.kv_heads) * T * d)};
  for (uint32_t p = 0; p < T; ++p) {
    for (uint32_t head = 0; head < c.heads; ++head)
      for (uint32_t i = 0; i < d; ++i) h.q[(size_t(head) * T + p) * d + i] = float(queries[p][head * d + i]);
    for (uint32_t g = 0; g < c.kv_heads; ++g)
      for (uint32_t i = 0; i < d; ++i) {
        h.k[(size_t(g) * T + p) * d + i] = float(l.keys[p][g * d + i]);
        h.v[(size_t(g) * T + p) * d + i] = float(l.values[p][g * d + i]);
      }
  }
  return h;
}

// The forward pass, a block of positions at a time through each layer (as
// the engine's chunks go); `on_qkv(layer, position, q, k, v)` sees each
// layer's rotated, rounded q, k and v, and `rule` may narrow each block's attention.
template <typename OnQkv>
std::vector<std::vector<double>> forward(const Checkpoint& checkpoint, std::span<const int32_t> tokens,
                                         const std::vector<Block>& blocks, const AttendRule& rule, OnQkv on_qkv,
                                         bool round_stored = true) {
  if (checkpoint.random()) throw InputError("the float64 reference reads the weights, which a random checkpoint draws on the device");
  const ModelConfig& c = checkpoint.config();
  const DType dtype = checkpoint.matrix_dtype();
  const Vector embedding = widen(checkpoint.embedding()), lm_head = widen(checkpoint.lm_head());
  const Vector final_norm = widen(checkpoint.final_norm());
  std::vector<Layer> layers;
  for (const model::LayerWeights& w : checkpoint.layers())
    layers.push_back({widen(w.attention_norm), widen(w.wq), widen(w.wk), widen(w.wv), widen(w.wo),
                      w.bq.present() ? widen(w.bq) : Vector{}, w.bk.present() ? widen(w.bk) : Vector{},
                      w.bv.present() ? widen(w.bv) : Vector{}, widen(w.mlp_norm), widen(w.w_gate), widen(w.w_up),
                      widen(w.w_down), w.q_norm.present() ? widen(w.q_norm) : Vector{},
                      w.k_norm.present() ? widen(w.k_norm) : Vector{}, {}, {}});
  const uint32_t d = c.head_dim, group = c.heads / c.kv_heads;
  const double scale = 1.0 / std::sqrt(double(d));
  std::vector<std::vector<Vector>> queries(layers.size());  // per layer, per position: the rule's view
  std::vector<std::vector<double>> logits;
  for (const Block& block : blocks) {
    std::vector<Vector> x;
    for (uint32_t p = block.first_query; p < block.first_query + block.n_queries; ++p)
      x.emplace_back(embedding.begin() + long(size_t(tokens[p]) * c.hidden),
                     embedding.begin() + long(size_t(tokens[p] + 1) * c.hidden));
    for (Layer& l : layers) {
      const uint32_t layer = uint32_t(&l - layers.data());
      std::vector<Vector> q_block;
      for (uint32_t i = 0; i < block.n_queries; ++i) {
        const uint32_t position = block.first_query + i;
        const Vector normed = rms_norm(x[i], l.attention_norm, c.rms_eps);
        Vector q = linear(l.wq, normed, l.bq.empty() ? nullptr : &l.bq);
        Vector k = linear(l.wk, normed, l.bk.empty() ? nullptr : &l.bk);
        Vector v = linear(l.wv, normed, l.bv.empty() ? nullptr : &l.bv);
        if (!l.q_norm.empty()) {
          norm_heads(q, l.q_norm, c.heads, c.rms_eps);
          norm_heads(k, l.k_norm, c.kv_heads, c.rms_eps);
        }
        rotate(q, c.heads, c, position);
        rotate(k, c.kv_heads, c, position);
        if (round_stored)
          for (Vector* values : {&q, &k, &v})
            for (double& e : *values) e = stored(e, dtype);
        on_qkv(layer, position, q, k, v);
        l.keys.push_back(k);
        l.values.push_back(v);
        queries[layer].push_back(q);
        q_block.push_back(q);
      }
      std::optional<Selection> selection;
      if (rule) selection = rule(layer, host_layer_so_far(c, queries[layer], l, scale), block);
      for (uint32_t i = 0; i < block.n_queries; ++i) {
        const uint32_t position = block.first_query + i;
        const Vector& q = q_block[i];
        Vector attended(size_t(c.heads) * d, 0.0);
        for (uint32_t h = 0; h < c.heads; ++h) {
          const uint32_t g = h / group;
          std::vector<uint32_t> keys;  // the attended set of docs/methods.md
          if (!selection) {
            for (uint32_t j = 0; j <= position; ++j) keys.push_back(j);
          } else {
            for (int32_t j : (*selection)[h])
              if (j >= 0) keys.push_back(uint32_t(j));
            if (block.mode == Mode::prefill)
              for (uint32_t j = block.first_query; j <= position; ++j) keys.push_back(j);
          }
          Vector scores(keys.size());
          double largest = -INFINITY;
          for (size_t n = 0; n < keys.size(); ++n) {
            double s = 0;
            for (uint32_t e = 0; e < d; ++e) s += q[h * d + e] * l.keys[keys[n]][g * d + e];
            scores[n] = s * scale;
            largest = std::max(largest, scores[n]);
          }
          double total = 0;
          for (double& s : scores) total += (s = std::exp(s - largest));
          for (size_t n = 0; n < keys.size(); ++n)
            for (uint32_t e = 0; e < d; ++e) attended[h * d + e] += scores[n] / total * l.values[keys[n]][g * d + e];
        }
        const Vector out = linear(l.wo, attended);
        for (size_t e = 0; e < x[i].size(); ++e) x[i][e] += out[e];
        const Vector normed_mlp = rms_norm(x[i], l.mlp_norm, c.rms_eps);
        Vector gate = linear(l.w_gate, normed_mlp);
        const Vector up = linear(l.w_up, normed_mlp);
        for (size_t e = 0; e < gate.size(); ++e) gate[e] = gate[e] / (1 + std::exp(-gate[e])) * up[e];
        const Vector down = linear(l.w_down, gate);
        for (size_t e = 0; e < x[i].size(); ++e) x[i][e] += down[e];
      }
    }
    for (const Vector& row : x) logits.push_back(linear(lm_head, rms_norm(row, final_norm, c.rms_eps)));
  }
  return logits;
}

// One block per position: dense attention does not depend on the blocking.
std::vector<Block> single_positions(size_t tokens) {
  std::vector<Block> blocks;
  for (uint32_t p = 0; p < tokens; ++p) blocks.push_back({Mode::decode, p, 1});
  return blocks;
}

}  // namespace

std::vector<std::vector<double>> model_logits(const Checkpoint& checkpoint, std::span<const int32_t> tokens) {
  return model_logits(checkpoint, tokens, single_positions(tokens.size()), {});
}

std::vector<std::vector<double>> model_logits(const Checkpoint& checkpoint, std::span<const int32_t> tokens,
                                              const std::vector<Block>& blocks, const AttendRule& rule, bool round_stored) {
  return forward(checkpoint, tokens, blocks, rule, [](uint32_t, uint32_t, const Vector&, const Vector&, const Vector&) {},
                 round_stored);
}

LayerQkv model_qkv(const Checkpoint& checkpoint, std::span<const int32_t> tokens, uint32_t layer) {
  const ModelConfig& c = checkpoint.config();
  const size_t T = tokens.size(), d = c.head_dim;
  LayerQkv out{Vector(size_t(c.heads) * T * d), Vector(size_t(c.kv_heads) * T * d), Vector(size_t(c.kv_heads) * T * d)};
  forward(checkpoint, tokens, single_positions(T), {}, [&](uint32_t l, uint32_t position, const Vector& q, const Vector& k, const Vector& v) {
    if (l != layer) return;
    for (size_t h = 0; h < c.heads; ++h)
      for (size_t i = 0; i < d; ++i) out.q[(h * T + position) * d + i] = q[h * d + i];
    for (size_t g = 0; g < c.kv_heads; ++g)
      for (size_t i = 0; i < d; ++i) {
        out.k[(g * T + position) * d + i] = k[g * d + i];
        out.v[(g * T + position) * d + i] = v[g * d + i];
      }
  });
  return out;
}

}  // namespace kv::reference
