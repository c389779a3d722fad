#include "reference/model.h"

#include <cmath>

#include "half.h"

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
      const double xa = x[a], xb = x[b];
      x[a] = xa * std::cos(angle) - xb * std::sin(angle);
      x[b] = xa * std::sin(angle) + xb * std::cos(angle);
    }
}

struct Layer {
  Vector attention_norm, wq, wk, wv, wo, bq, bk, bv, mlp_norm, w_gate, w_up, w_down;
  std::vector<Vector> keys, values;  // per position, [G * d]
};

// The forward pass; `on_qkv(layer, position, q, k, v)` sees each layer's
// rotated, rounded q, k and v.
template <typename OnQkv>
std::vector<std::vector<double>> forward(const Checkpoint& checkpoint, std::span<const int32_t> tokens, OnQkv on_qkv) {
  const ModelConfig& c = checkpoint.config();
  const DType dtype = checkpoint.matrix_dtype();
  const Vector embedding = widen(checkpoint.embedding()), lm_head = widen(checkpoint.lm_head());
  const Vector final_norm = widen(checkpoint.final_norm());
  std::vector<Layer> layers;
  for (const model::LayerWeights& w : checkpoint.layers())
    layers.push_back({widen(w.attention_norm), widen(w.wq), widen(w.wk), widen(w.wv), widen(w.wo),
                      w.bq.present() ? widen(w.bq) : Vector{}, w.bk.present() ? widen(w.bk) : Vector{},
                      w.bv.present() ? widen(w.bv) : Vector{}, widen(w.mlp_norm), widen(w.w_gate), widen(w.w_up),
                      widen(w.w_down), {}, {}});
  const uint32_t d = c.head_dim, group = c.heads / c.kv_heads;
  std::vector<std::vector<double>> logits;
  for (uint32_t position = 0; position < tokens.size(); ++position) {
    Vector x(embedding.begin() + long(size_t(tokens[position]) * c.hidden),
             embedding.begin() + long(size_t(tokens[position] + 1) * c.hidden));
    for (Layer& l : layers) {
      const Vector normed = rms_norm(x, l.attention_norm, c.rms_eps);
      Vector q = linear(l.wq, normed, l.bq.empty() ? nullptr : &l.bq);
      Vector k = linear(l.wk, normed, l.bk.empty() ? nullptr : &l.bk);
      Vector v = linear(l.wv, normed, l.bv.empty() ? nullptr : &l.bv);
      rotate(q, c.heads, c, position);
      rotate(k, c.kv_heads, c, position);
      for (double& e : q) e = stored(e, dtype);
      for (double& e : k) e = stored(e, dtype);
      for (double& e : v) e = stored(e, dtype);
      on_qkv(uint32_t(&l - layers.data()), position, q, k, v);
      l.keys.push_back(k);
      l.values.push_back(v);
      Vector attended(size_t(c.heads) * d, 0.0);
      for (uint32_t h = 0; h < c.heads; ++h) {
        const uint32_t g = h / group;
        Vector scores(position + 1);
        double largest = -INFINITY;
        for (uint32_t j = 0; j <= position; ++j) {
          double s = 0;
          for (uint32_t i = 0; i < d; ++i) s += q[h * d + i] * l.keys[j][g * d + i];
          scores[j] = s / std::sqrt(double(d));
          largest = std::max(largest, scores[j]);
        }
        double total = 0;
        for (double& s : scores) total += (s = std::exp(s - largest));
        for (uint32_t j = 0; j <= position; ++j)
          for (uint32_t i = 0; i < d; ++i) attended[h * d + i] += scores[j] / total * l.values[j][g * d + i];
      }
      const Vector out = linear(l.wo, attended);
      for (size_t i = 0; i < x.size(); ++i) x[i] += out[i];
      const Vector normed_mlp = rms_norm(x, l.mlp_norm, c.rms_eps);
      Vector gate = linear(l.w_gate, normed_mlp);
      const Vector up = linear(l.w_up, normed_mlp);
      for (size_t i = 0; i < gate.size(); ++i) gate[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
      const Vector down = linear(l.w_down, gate);
      for (size_t i = 0; i < x.size(); ++i) x[i] += down[i];
    }
    logits.push_back(linear(lm_head, rms_norm(x, final_norm, c.rms_eps)));
  }
  return logits;
}

}  // namespace

std::vector<std::vector<double>> model_logits(const Checkpoint& checkpoint, std::span<const int32_t> tokens) {
  return forward(checkpoint, tokens, [](uint32_t, uint32_t, const Vector&, const Vector&, const Vector&) {});
}

LayerQkv model_qkv(const Checkpoint& checkpoint, std::span<const int32_t> tokens, uint32_t layer) {
  const ModelConfig& c = checkpoint.config();
  const size_t T = tokens.size(), d = c.head_dim;
  LayerQkv out{Vector(size_t(c.heads) * T * d), Vector(size_t(c.kv_heads) * T * d), Vector(size_t(c.kv_heads) * T * d)};
  forward(checkpoint, tokens, [&](uint32_t l, uint32_t position, const Vector& q, const Vector& k, const Vector& v) {
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
