#include "reference/selection.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "base/error.h"

namespace kv::reference {
namespace {

using Vector = std::vector<double>;

const float* row(const std::vector<float>& t, size_t head, size_t tokens, size_t position, size_t d) {
  return &t[(head * tokens + position) * d];
}

double dot(const Vector& a, const float* b) {
  double s = 0;
  for (size_t c = 0; c < a.size(); ++c) s += a[c] * double(b[c]);
  return s;
}

Vector widen(const float* x, size_t d) { return Vector(x, x + d); }

double norm(const Vector& a) {
  double s = 0;
  for (double x : a) s += x * x;
  return std::sqrt(s);
}

// The k highest scores (ties toward the lower index), as ascending indices.
std::vector<int32_t> top_k(const Vector& scores, uint32_t k) {
  std::vector<int32_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t keep = std::min<size_t>(k, order.size());
  std::partial_sort(order.begin(), order.begin() + keep, order.end(), [&](int32_t a, int32_t b) {
    return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
  });
  order.resize(keep);
  std::sort(order.begin(), order.end());
  return order;
}

std::vector<int32_t> all_of(uint32_t n) {
  std::vector<int32_t> all(n);
  std::iota(all.begin(), all.end(), 0);
  return all;
}

Vector mean_query(const HostLayer& l, uint32_t head, const Block& block) {
  const size_t d = l.shape.dim;
  Vector mean(d, 0.0);
  for (uint32_t i = 0; i < block.n_queries; ++i) {
    const float* q = row(l.q, head, l.shape.tokens, block.first_query + i, d);
    for (size_t c = 0; c < d; ++c) mean[c] += q[c];
  }
  for (double& x : mean) x /= block.n_queries;
  return mean;
}

// Dense causal probabilities of one query over keys [0, position].
Vector probabilities(const HostLayer& l, uint32_t head, uint32_t position) {
  const uint32_t g = head / l.shape.group(), d = l.shape.dim;
  const Vector q = widen(row(l.q, head, l.shape.tokens, position, d), d);
  Vector p(position + 1);
  for (uint32_t j = 0; j <= position; ++j) p[j] = l.scale * dot(q, row(l.k, g, l.shape.tokens, j, d));
  const double max = *std::max_element(p.begin(), p.end());
  double sum = 0;
  for (double& x : p) sum += (x = std::exp(x - max));
  for (double& x : p) x /= sum;
  return p;
}

// Rows and the heads each aggregates, for methods scored per query head or per KV head.
std::vector<std::vector<uint32_t>> row_heads(const AttentionShape& s, HeadAggregate aggregate) {
  std::vector<std::vector<uint32_t>> rows;
  if (aggregate == HeadAggregate::head) {
    for (uint32_t h = 0; h < s.heads; ++h) rows.push_back({h});
  } else {
    for (uint32_t g = 0; g < s.kv_heads; ++g) {
      rows.emplace_back();
      for (uint32_t h = g * s.group(); h < (g + 1) * s.group(); ++h) rows.back().push_back(h);
    }
  }
  return rows;
}

double aggregate(const Vector& per_head, HeadAggregate how) {
  if (how == HeadAggregate::mean) return std::accumulate(per_head.begin(), per_head.end(), 0.0) / per_head.size();
  return *std::max_element(per_head.begin(), per_head.end());
}

Selection oracle(const HostLayer& l, const Block& block, uint32_t budget) {
  const uint32_t n = block.candidates();
  Selection s;
  if (block.mode == Mode::decode) {
    for (uint32_t h = 0; h < l.shape.heads; ++h) {
      Vector p = probabilities(l, h, block.first_query);
      s.push_back(top_k(p, budget));
    }
    return s;
  }
  for (uint32_t g = 0; g < l.shape.kv_heads; ++g) {
    Vector mass(n, 0.0);
    for (uint32_t h = g * l.shape.group(); h < (g + 1) * l.shape.group(); ++h)
      for (uint32_t i = 0; i < block.n_queries; ++i) {
        Vector p = probabilities(l, h, block.first_query + i);
        for (uint32_t j = 0; j < n; ++j) mass[j] += p[j];
      }
    s.push_back(top_k(mass, budget));
  }
  return s;
}

// Cosine of each of the block's queries of `head` with their mean (QuoKA step 1).
Vector mean_cosines(const HostLayer& l, uint32_t head, const Block& block) {
  const uint32_t d = l.shape.dim;
  const Vector m = mean_query(l, head, block);
  const double m_norm = norm(m);
  Vector cosine(block.n_queries);
  for (uint32_t i = 0; i < block.n_queries; ++i) {
    const Vector q = widen(row(l.q, head, l.shape.tokens, block.first_query + i, d), d);
    const double q_norm = norm(q);
    double product = 0;
    for (uint32_t c = 0; c < d; ++c) product += q[c] * m[c];
    cosine[i] = q_norm > 0 && m_norm > 0 ? product / (q_norm * m_norm) : 0.0;
  }
  return cosine;
}

Selection quoka(const HostLayer& l, const MethodOptions& o, const Block& block, uint32_t budget) {
  Selection s;
  for (uint32_t g = 0; g < l.shape.kv_heads; ++g) s.push_back(top_k(quoka_scores(l, o, block, g), budget));
  return s;
}

// Quest's scores of one row's whole pages: those before the page holding the
// block's last candidate, which is kept unscored.
Vector quest_page_scores(const HostLayer& l, const MethodOptions& o, const Block& block,
                         const std::vector<uint32_t>& heads) {
  const uint32_t d = l.shape.dim, T = l.shape.tokens, P = o.page_size;
  const uint32_t g = heads.front() / l.shape.group(), last_page = (block.candidates() - 1) / P;
  std::vector<Vector> queries;
  for (uint32_t h : heads) queries.push_back(mean_query(l, h, block));
  Vector page_scores(last_page);
  for (uint32_t p = 0; p < last_page; ++p) {
    Vector high(d, -INFINITY), low(d, INFINITY);
    for (uint32_t j = p * P; j < (p + 1) * P; ++j)
      for (uint32_t c = 0; c < d; ++c) {
        high[c] = std::max<double>(high[c], row(l.k, g, T, j, d)[c]);
        low[c] = std::min<double>(low[c], row(l.k, g, T, j, d)[c]);
      }
    Vector per_head;
    for (const Vector& q : queries) {
      double u = 0;
      for (uint32_t c = 0; c < d; ++c) u += std::max(q[c] * high[c], q[c] * low[c]);
      per_head.push_back(u);
    }
    page_scores[p] = aggregate(per_head, o.gqa_agg);
  }
  return page_scores;
}

// The pages Quest keeps besides the last one.
uint32_t quest_kept_pages(const MethodOptions& o, uint32_t budget) {
  return budget / o.page_size > 1 ? budget / o.page_size - 1 : 0;
}

Selection quest(const HostLayer& l, const MethodOptions& o, const Block& block, uint32_t budget) {
  const uint32_t n = block.candidates(), P = o.page_size;
  Selection s;
  for (const std::vector<uint32_t>& heads : row_heads(l.shape, o.gqa_agg)) {
    if (n <= budget) {
      s.push_back(all_of(n));
      continue;
    }
    const uint32_t last = n - 1, last_page = last / P;
    const Vector page_scores = quest_page_scores(l, o, block, heads);
    std::vector<int32_t> tokens;
    for (int32_t p : top_k(page_scores, quest_kept_pages(o, budget)))
      for (uint32_t j = p * P; j < (p + 1) * P; ++j) tokens.push_back(int32_t(j));
    for (uint32_t j = last_page * P; j <= last; ++j) tokens.push_back(int32_t(j));
    s.push_back(tokens);
  }
  return s;
}

Selection fier(const HostLayer& l, const MethodOptions& o, const Block& block, uint32_t budget) {
  Selection s;
  for (const Vector& scores : fier_scores(l, o, block)) s.push_back(top_k(scores, budget));
  return s;
}

Selection streaming(const HostLayer& l, const MethodOptions& o, const Block& block, uint32_t budget) {
  const uint32_t n = block.candidates();
  std::vector<int32_t> tokens;
  if (n <= budget) {
    tokens = all_of(n);
  } else {
    const uint32_t sinks = std::min(o.n_sink, budget);
    for (uint32_t j = 0; j < sinks; ++j) tokens.push_back(int32_t(j));
    for (uint32_t j = n - (budget - sinks); j < n; ++j) tokens.push_back(int32_t(j));
  }
  return Selection(l.shape.kv_heads, tokens);
}

Selection sparq(const HostLayer& l, const MethodOptions& o, const Block& block, uint32_t budget) {
  Selection s;
  for (const Vector& scores : sparq_scores(l, o, block)) s.push_back(top_k(scores, budget));
  return s;
}

// The queries SnapKV, H2O and SampleAttention look at for a block, and the
// recent candidates they keep outright (docs/methods.md), restated here apart
// from the GPU pipeline's own statement (methods/window.cpp) so that each checks the other.
struct WindowQueries {
  std::vector<uint32_t> positions;
  uint32_t recent = 0;
  uint32_t pool = 1;
};

WindowQueries window_queries(const std::string& method, const MethodOptions& o, const Block& block, uint32_t budget) {
  const uint32_t n = block.candidates(), last = block.first_query + block.n_queries - 1;
  // In prefill a window never reaches back past the chunk's own queries.
  const uint32_t earliest = block.mode == Mode::prefill ? block.first_query : 0;
  WindowQueries w;
  if (method == "snapkv") {
    for (uint32_t p = last + 1; p-- > earliest && last + 1 - p <= o.snap_window;) w.positions.push_back(p);
    w.recent = block.mode == Mode::decode ? std::min<uint32_t>({uint32_t(w.positions.size()), budget, n}) : 0;
    w.pool = o.snap_pool;
  } else if (method == "h2o") {
    for (uint32_t p = 0; p <= last; ++p) w.positions.push_back(p);
    w.recent = std::min(budget / 2, n);
  } else if (method == "sampleattention") {
    for (uint32_t i = 0; i < o.sample_queries && uint64_t(i) * o.sample_stride <= last - earliest; ++i)
      w.positions.push_back(last - i * o.sample_stride);
    w.recent = std::min(budget / 8, n);
  } else {
    throw InputError("reference: '" + method + "' is no window method");
  }
  return w;
}

// A window method's scores of KV head g: the attention of its queries, summed
// over the group's heads and the queries, over the scored prefix (the
// candidates before the recent ones), average-pooled when pool > 1.
Vector window_scores(const HostLayer& l, const Block& block, const WindowQueries& w, uint32_t g) {
  const uint32_t prefix = block.candidates() - w.recent, r = l.shape.group();
  Vector scores(prefix, 0.0);
  for (uint32_t h = g * r; h < (g + 1) * r; ++h)
    for (uint32_t position : w.positions) {
      const Vector p = probabilities(l, h, position);
      for (uint32_t j = 0; j < prefix && j <= position; ++j) scores[j] += p[j];
    }
  if (w.pool <= 1) return scores;
  Vector pooled(prefix, 0.0);
  for (int64_t j = 0; j < prefix; ++j)
    for (int64_t u = -int64_t(w.pool / 2); u <= int64_t(w.pool / 2); ++u)
      if (j + u >= 0 && j + u < prefix) pooled[j] += scores[j + u] / w.pool;
  return pooled;
}

// Per KV head, the top budget - recent window scores, then the `recent` last candidates.
Selection window_method(const HostLayer& l, const std::string& method, const MethodOptions& o, const Block& block,
                        uint32_t budget) {
  const WindowQueries w = window_queries(method, o, block, budget);
  const uint32_t n = block.candidates(), prefix = n - w.recent, heavy = budget - w.recent;
  Selection s;
  for (uint32_t g = 0; g < l.shape.kv_heads; ++g) {
    std::vector<int32_t> kept = heavy > 0 ? top_k(window_scores(l, block, w, g), heavy) : std::vector<int32_t>{};
    for (uint32_t j = prefix; j < n; ++j) kept.push_back(int32_t(j));
    s.push_back(kept);
  }
  return s;
}

// Loki's basis for one KV head, computed apart from the method's own
// (methods/pca.cpp) so that each checks the other: the covariance of the keys
// diagonalised by cyclic Jacobi rotations (angles from atan2), then the
// `rank` eigenvectors of the largest eigenvalues, as rows [rank][d]. An
// eigenvector's sign is arbitrary and cancels in Loki's scores.
std::vector<Vector> principal_axes(const float* keys, uint32_t tokens, uint32_t d, uint32_t rank) {
  Vector mean(d, 0.0);
  for (uint32_t j = 0; j < tokens; ++j)
    for (uint32_t c = 0; c < d; ++c) mean[c] += keys[size_t(j) * d + c];
  for (double& m : mean) m /= tokens;
  std::vector<Vector> a(d, Vector(d, 0.0)), v(d, Vector(d, 0.0));
  for (uint32_t j = 0; j < tokens; ++j)
    for (uint32_t x = 0; x < d; ++x)
      for (uint32_t y = 0; y < d; ++y)
        a[x][y] += (keys[size_t(j) * d + x] - mean[x]) * (keys[size_t(j) * d + y] - mean[y]) / tokens;
  for (uint32_t x = 0; x < d; ++x) v[x][x] = 1.0;
  // Sweeps over every pair (p, q), each rotation zeroing a[p][q], until the
  // off-diagonal mass is negligible beside the diagonal.
  for (int sweep = 0; sweep < 64; ++sweep) {
    double off = 0, diagonal = 0;
    for (uint32_t x = 0; x < d; ++x)
      for (uint32_t y = 0; y < d; ++y) (x == y ? diagonal : off) += a[x][y] * a[x][y];
    if (off <= 1e-26 * diagonal || diagonal == 0) break;
    for (uint32_t p = 0; p < d; ++p)
      for (uint32_t q = p + 1; q < d; ++q) {
        if (a[p][q] == 0) continue;
        const double angle = 0.5 * std::atan2(2 * a[p][q], a[q][q] - a[p][p]);
        const double c = std::cos(angle), s = std::sin(angle);
        for (uint32_t k = 0; k < d; ++k) {  // A <- A R: columns p and q
          const double akp = a[k][p], akq = a[k][q];
          a[k][p] = c * akp - s * akq;
          a[k][q] = s * akp + c * akq;
        }
        for (uint32_t k = 0; k < d; ++k) {  // A <- R^T A: rows p and q
          const double apk = a[p][k], aqk = a[q][k];
          a[p][k] = c * apk - s * aqk;
          a[q][k] = s * apk + c * aqk;
        }
        for (uint32_t k = 0; k < d; ++k) {  // V <- V R: the eigenvectors are V's columns
          const double vkp = v[k][p], vkq = v[k][q];
          v[k][p] = c * vkp - s * vkq;
          v[k][q] = s * vkp + c * vkq;
        }
      }
  }
  std::vector<uint32_t> order(d);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return a[x][x] > a[y][y]; });
  std::vector<Vector> axes;
  for (uint32_t c = 0; c < rank; ++c) {
    Vector& axis = axes.emplace_back(d);
    for (uint32_t k = 0; k < d; ++k) axis[k] = v[k][order[c]];
  }
  return axes;
}

Selection loki(const HostLayer& l, const MethodOptions& o, const Block& block, uint32_t budget) {
  Selection s;
  for (const Vector& scores : loki_scores(l, o, block)) s.push_back(top_k(scores, budget));
  return s;
}

Selection tova(const HostLayer& l, const Block& block, uint32_t budget) {
  const uint32_t n = block.candidates(), position = block.first_query + block.n_queries - 1;
  Vector scores(n, 0.0);
  for (uint32_t h = 0; h < l.shape.heads; ++h) {
    const Vector p = probabilities(l, h, position);
    for (uint32_t j = 0; j < n; ++j) scores[j] += p[j] / l.shape.heads;
  }
  return Selection(l.shape.kv_heads, top_k(scores, budget));
}

Selection keydiff(const HostLayer& l, const Block& block, uint32_t budget) {
  const uint32_t d = l.shape.dim, T = l.shape.tokens, n = block.candidates();
  Selection s;
  for (uint32_t g = 0; g < l.shape.kv_heads; ++g) {
    Vector anchor(d, 0.0), norms(n);
    for (uint32_t j = 0; j < n; ++j) {
      const Vector k = widen(row(l.k, g, T, j, d), d);
      norms[j] = norm(k);
      if (norms[j] > 0)
        for (uint32_t c = 0; c < d; ++c) anchor[c] += k[c] / norms[j] / n;
    }
    const double anchor_norm = norm(anchor);
    Vector scores(n, 0.0);
    for (uint32_t j = 0; j < n; ++j)
      if (norms[j] > 0 && anchor_norm > 0) scores[j] = -dot(anchor, row(l.k, g, T, j, d)) / (norms[j] * anchor_norm);
    s.push_back(top_k(scores, budget));
  }
  return s;
}

}  // namespace

std::vector<double> quoka_scores(const HostLayer& l, const MethodOptions& o, const Block& block, uint32_t g) {
  const uint32_t d = l.shape.dim, T = l.shape.tokens, n = block.candidates();
  const uint32_t keep = std::min(block.n_queries, o.n_q);
  // Step 1 and 2: each head's kept queries, normalised, in rank order.
  std::vector<std::vector<Vector>> kept;
  for (uint32_t h = g * l.shape.group(); h < (g + 1) * l.shape.group(); ++h) {
    std::vector<uint32_t> order(block.n_queries);
    std::iota(order.begin(), order.end(), 0u);
    if (block.n_queries > o.n_q) {
      const Vector cosine = mean_cosines(l, h, block);
      std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return cosine[a] < cosine[b]; });
    }
    kept.emplace_back();
    for (uint32_t r = 0; r < keep; ++r) {
      Vector q = widen(row(l.q, h, T, block.first_query + order[r], d), d);
      const double q_norm = norm(q);
      for (double& x : q) x = q_norm > 0 ? x / q_norm : 0.0;
      kept.back().push_back(q);
    }
  }
  // Step 3: aggregate over the group.
  std::vector<Vector> aggregates;
  if (o.quoka_group == GroupReduce::max) {
    for (const auto& head : kept) aggregates.insert(aggregates.end(), head.begin(), head.end());
  } else {
    for (uint32_t r = 0; r < keep; ++r) {
      Vector a(d, 0.0);
      for (const auto& head : kept)
        for (uint32_t c = 0; c < d; ++c) a[c] += head[r][c] / kept.size();
      aggregates.push_back(a);
    }
  }
  // Step 4: max cosine-style score against each normalised key.
  Vector scores(n);
  for (uint32_t j = 0; j < n; ++j) {
    Vector key = widen(row(l.k, g, T, j, d), d);
    const double k_norm = norm(key);
    double best = -INFINITY;
    for (const Vector& a : aggregates) {
      double product = 0;
      for (uint32_t c = 0; c < d; ++c) product += a[c] * key[c];
      best = std::max(best, k_norm > 0 ? product / k_norm : 0.0);
    }
    scores[j] = best;
  }
  return scores;
}

namespace {

// Fier's block bounds: per channel the min and max of KV head g's keys [b0, b1).
std::pair<Vector, Vector> block_bounds(const HostLayer& l, uint32_t g, uint32_t b0, uint32_t b1) {
  const uint32_t d = l.shape.dim, T = l.shape.tokens;
  Vector low(d, INFINITY), high(d, -INFINITY);
  for (uint32_t j = b0; j < b1; ++j)
    for (uint32_t c = 0; c < d; ++c) {
      high[c] = std::max<double>(high[c], row(l.k, g, T, j, d)[c]);
      low[c] = std::min<double>(low[c], row(l.k, g, T, j, d)[c]);
    }
  return {low, high};
}

// Fier's bit of key element x in a block whose channel spans [low, high].
bool fier_bit(double x, double low, double high) { return high > low && (x - low) / (high - low) >= 0.5; }

}  // namespace

std::vector<std::vector<double>> fier_scores(const HostLayer& l, const MethodOptions& o, const Block& block) {
  const uint32_t d = l.shape.dim, T = l.shape.tokens, n = block.candidates(), gs = o.group_size;
  std::vector<Vector> rows;
  for (const std::vector<uint32_t>& heads : row_heads(l.shape, o.gqa_agg)) {  // a row's heads share a KV head
    const uint32_t g = heads.front() / l.shape.group();
    std::vector<Vector> queries;
    for (uint32_t h : heads) queries.push_back(mean_query(l, h, block));
    Vector& scores = rows.emplace_back(n, 0.0);
    for (uint32_t b0 = 0; b0 < n; b0 += gs) {
      const uint32_t b1 = std::min(b0 + gs, n);  // blocks cut from keys [0, n)
      const auto [low, high] = block_bounds(l, g, b0, b1);
      for (uint32_t j = b0; j < b1; ++j) {
        Vector dequantised(d);
        for (uint32_t c = 0; c < d; ++c)
          dequantised[c] = fier_bit(row(l.k, g, T, j, d)[c], low[c], high[c]) ? high[c] : low[c];
        Vector per_head;
        for (const Vector& q : queries) {
          double score = 0;
          for (uint32_t c = 0; c < d; ++c) score += q[c] * dequantised[c];
          per_head.push_back(score);
        }
        scores[j] = aggregate(per_head, o.gqa_agg);
      }
    }
  }
  return rows;
}

std::vector<std::vector<double>> sparq_scores(const HostLayer& l, const MethodOptions& o, const Block& block) {
  const uint32_t d = l.shape.dim, T = l.shape.tokens, n = block.candidates();
  std::vector<Vector> rows;
  for (uint32_t h = 0; h < l.shape.heads; ++h) {
    const Vector q = mean_query(l, h, block);
    std::vector<uint32_t> channels(d);
    std::iota(channels.begin(), channels.end(), 0u);
    std::stable_sort(channels.begin(), channels.end(),
                     [&](uint32_t a, uint32_t b) { return std::abs(q[a]) > std::abs(q[b]); });
    channels.resize(std::min(o.sparq_r, d));
    Vector& scores = rows.emplace_back(n, 0.0);
    for (uint32_t j = 0; j < n; ++j) {
      const float* k = row(l.k, h / l.shape.group(), T, j, d);
      for (uint32_t c : channels) scores[j] += q[c] * k[c];
    }
  }
  return rows;
}

std::vector<std::vector<double>> loki_scores(const HostLayer& l, const MethodOptions& o, const Block& block) {
  const uint32_t d = l.shape.dim, T = l.shape.tokens, n = block.candidates(), rank = std::min(o.loki_r, d);
  std::vector<std::vector<Vector>> bases;
  for (uint32_t g = 0; g < l.shape.kv_heads; ++g) bases.push_back(principal_axes(&l.k[size_t(g) * T * d], T, d, rank));
  // U_g k_j of every candidate, once per KV head for all of its query heads.
  std::vector<Vector> projected_keys;
  for (uint32_t g = 0; g < l.shape.kv_heads; ++g) {
    Vector& projected = projected_keys.emplace_back(size_t(n) * rank, 0.0);
    for (uint32_t j = 0; j < n; ++j) {
      const float* k = row(l.k, g, T, j, d);
      for (uint32_t c = 0; c < rank; ++c)
        for (uint32_t x = 0; x < d; ++x) projected[size_t(j) * rank + c] += bases[g][c][x] * k[x];
    }
  }
  std::vector<Vector> rows;
  for (uint32_t h = 0; h < l.shape.heads; ++h) {
    const uint32_t g = h / l.shape.group();
    const Vector q = mean_query(l, h, block);
    Vector projected_query(rank, 0.0);
    Vector& scores = rows.emplace_back(n, 0.0);
    for (uint32_t c = 0; c < rank; ++c)
      for (uint32_t x = 0; x < d; ++x) projected_query[c] += bases[g][c][x] * q[x];
    for (uint32_t j = 0; j < n; ++j)
      for (uint32_t c = 0; c < rank; ++c) scores[j] += projected_query[c] * projected_keys[g][size_t(j) * rank + c];
  }
  return rows;
}

HostLayer host_layer(const Capture& capture, const CaptureLayer& layer) {
  return {layer.shape, capture.scale(layer), to_float(layer.dtype, layer.q->data), to_float(layer.dtype, layer.k->data),
          to_float(layer.dtype, layer.v->data)};
}

std::vector<double> quoka_decision_gaps(const HostLayer& layer, const MethodOptions& options, const Block& block,
                                        uint32_t budget) {
  std::vector<double> gaps(layer.shape.kv_heads, INFINITY);
  for (uint32_t g = 0; g < layer.shape.kv_heads; ++g) {
    if (budget < block.candidates()) {
      Vector scores = quoka_scores(layer, options, block, g);
      std::sort(scores.begin(), scores.end(), std::greater<>());
      gaps[g] = scores[budget - 1] - scores[budget];
    }
    if (block.n_queries <= options.n_q) continue;
    // The mean adds the heads' kept queries rank by rank, so with more than
    // one head the order among the kept ones decides too, not only the cut.
    const bool order_decides = options.quoka_group == GroupReduce::mean && layer.shape.group() > 1;
    for (uint32_t h = g * layer.shape.group(); h < (g + 1) * layer.shape.group(); ++h) {
      Vector cosine = mean_cosines(layer, h, block);
      std::sort(cosine.begin(), cosine.end());
      for (uint32_t r = order_decides ? 1 : options.n_q; r <= options.n_q; ++r)
        gaps[g] = std::min(gaps[g], cosine[r] - cosine[r - 1]);
    }
  }
  return gaps;
}

std::vector<double> quest_decision_gaps(const HostLayer& layer, const MethodOptions& options, const Block& block,
                                        uint32_t budget) {
  std::vector<double> gaps;
  for (const std::vector<uint32_t>& heads : row_heads(layer.shape, options.gqa_agg)) {
    gaps.push_back(INFINITY);
    if (block.candidates() <= budget) continue;
    Vector scores = quest_page_scores(layer, options, block, heads);
    const uint32_t kept = quest_kept_pages(options, budget);
    if (kept == 0 || kept >= scores.size()) continue;
    std::sort(scores.begin(), scores.end(), std::greater<>());
    const double larger = std::max(std::abs(scores[kept - 1]), std::abs(scores[kept]));
    gaps.back() = larger > 0 ? (scores[kept - 1] - scores[kept]) / larger : 0.0;
  }
  return gaps;
}

std::vector<double> window_scores(const HostLayer& layer, const std::string& method, const MethodOptions& options,
                                  const Block& block, uint32_t budget, uint32_t kv_head) {
  return window_scores(layer, block, window_queries(method, options, block, budget), kv_head);
}

namespace {
// LessIsMore at the layer that chooses (docs/methods.md): m = floor(K (100 -
// window) / 100) keys ranked, the rest the window of the last candidates. Each
// query head (a chunk: its mean query) ranks the keys before the window by
// logit, highest first and ties toward the lower position; the heads' top m
// lists, read rank by rank and head by head, give their first m distinct keys.
Selection lessismore(const HostLayer& l, const MethodOptions& o, const Block& block, uint32_t budget) {
  const uint32_t n = block.candidates(), d = l.shape.dim;
  if (budget >= n) return Selection(l.shape.kv_heads, all_of(n));
  const uint32_t ranked = uint32_t(uint64_t(budget) * (100 - o.lim_window) / 100), window = budget - ranked;
  const uint32_t scored = n - window;
  std::vector<std::vector<int32_t>> by_rank(l.shape.heads);  // each head's top m, best first
  for (uint32_t h = 0; h < l.shape.heads; ++h) {
    const Vector q = mean_query(l, h, block);
    Vector scores(scored);
    for (uint32_t j = 0; j < scored; ++j) scores[j] = l.scale * dot(q, row(l.k, h / l.shape.group(), l.shape.tokens, j, d));
    std::vector<int32_t> order(scored);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + ranked, order.end(), [&](int32_t a, int32_t b) {
      return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
    });
    order.resize(ranked);
    by_rank[h] = order;
  }
  std::vector<int32_t> kept;
  std::vector<bool> seen(scored, false);
  for (uint32_t r = 0; r < ranked && kept.size() < ranked; ++r)
    for (uint32_t h = 0; h < l.shape.heads && kept.size() < ranked; ++h)
      if (!seen[by_rank[h][r]]) seen[by_rank[h][r]] = true, kept.push_back(by_rank[h][r]);
  for (uint32_t j = scored; j < n; ++j) kept.push_back(int32_t(j));
  std::sort(kept.begin(), kept.end());
  return Selection(l.shape.kv_heads, kept);
}

// Every method's reference, by the name of its row in method_table()
// (tests/test_method_table.cpp checks that none is missing).
using Selector = Selection (*)(const HostLayer&, const std::string& method, const MethodOptions&, const Block&,
                               uint32_t budget);
const std::vector<std::pair<std::string, Selector>> kSelectors = {
    {"oracle", [](const HostLayer& l, const std::string&, const MethodOptions&, const Block& b, uint32_t k) { return oracle(l, b, k); }},
    {"quoka", [](const HostLayer& l, const std::string&, const MethodOptions& o, const Block& b, uint32_t k) { return quoka(l, o, b, k); }},
    {"quest", [](const HostLayer& l, const std::string&, const MethodOptions& o, const Block& b, uint32_t k) { return quest(l, o, b, k); }},
    {"fier", [](const HostLayer& l, const std::string&, const MethodOptions& o, const Block& b, uint32_t k) { return fier(l, o, b, k); }},
    {"streaming", [](const HostLayer& l, const std::string&, const MethodOptions& o, const Block& b, uint32_t k) { return streaming(l, o, b, k); }},
    {"keydiff", [](const HostLayer& l, const std::string&, const MethodOptions&, const Block& b, uint32_t k) { return keydiff(l, b, k); }},
    {"tova", [](const HostLayer& l, const std::string&, const MethodOptions&, const Block& b, uint32_t k) { return tova(l, b, k); }},
    {"sparq", [](const HostLayer& l, const std::string&, const MethodOptions& o, const Block& b, uint32_t k) { return sparq(l, o, b, k); }},
    {"loki", [](const HostLayer& l, const std::string&, const MethodOptions& o, const Block& b, uint32_t k) { return loki(l, o, b, k); }},
    {"snapkv", window_method},
    {"h2o", window_method},
    {"sampleattention", window_method},
    {"lessismore", [](const HostLayer& l, const std::string&, const MethodOptions& o, const Block& b, uint32_t k) { return lessismore(l, o, b, k); }},
};

}  // namespace

bool has_reference(const std::string& method) {
  return std::any_of(kSelectors.begin(), kSelectors.end(), [&](const auto& s) { return s.first == method; });
}

Selection select(const std::string& method, const MethodOptions& options, const HostLayer& layer, const Block& block,
                 uint32_t budget) {
  for (const auto& [name, selector] : kSelectors)
    if (name == method) return selector(layer, method, options, block, budget);
  throw InputError("reference: unknown method '" + method + "'");
}

std::vector<HeadMetrics> metrics(const HostLayer& l, const Block& block, const Selection& selection,
                                 Granularity selection_granularity, const Selection& oracle_selection,
                                 Granularity oracle_granularity, uint32_t needle_first, uint32_t needle_end) {
  const uint32_t d = l.shape.dim, T = l.shape.tokens, r = l.shape.group();
  std::vector<HeadMetrics> heads(l.shape.heads);
  for (uint32_t h = 0; h < l.shape.heads; ++h) {
    const std::vector<int32_t>& s = selection[selection_granularity == Granularity::kv_head ? h / r : h];
    const std::vector<int32_t>& o = oracle_selection[oracle_granularity == Granularity::kv_head ? h / r : h];
    size_t hits = 0;
    for (int32_t j : s) hits += std::binary_search(o.begin(), o.end(), j);
    heads[h].recall = o.empty() ? 1.0 : double(hits) / o.size();
    const uint32_t needle_candidates = std::min(needle_end, block.candidates()) - std::min(needle_first, std::min(needle_end, block.candidates()));
    if (needle_candidates > 0) {
      size_t found = 0;
      for (int32_t j : s) found += uint32_t(j) >= needle_first && uint32_t(j) < needle_end;
      heads[h].needle_recall = double(found) / needle_candidates;
    }
    const uint32_t g = h / r;
    for (uint32_t i = 0; i < block.n_queries; ++i) {
      const uint32_t position = block.first_query + i;
      Vector p = probabilities(l, h, position);
      std::vector<bool> attended(position + 1, false);
      for (int32_t j : s) attended[j] = true;
      if (block.mode == Mode::prefill)
        for (uint32_t j = block.first_query; j <= position; ++j) attended[j] = true;
      Vector dense(d, 0.0), sparse(d, 0.0);
      double coverage = 0;
      for (uint32_t j = 0; j <= position; ++j) {
        const float* v = row(l.v, g, T, j, d);
        for (uint32_t c = 0; c < d; ++c) dense[c] += p[j] * v[c];
        if (!attended[j]) continue;
        coverage += p[j];
        for (uint32_t c = 0; c < d; ++c) sparse[c] += p[j] * v[c];
      }
      double difference = 0, dense_norm = 0;
      for (uint32_t c = 0; c < d; ++c) {
        difference += std::pow(sparse[c] / coverage - dense[c], 2);
        dense_norm += dense[c] * dense[c];
      }
      heads[h].coverage += coverage / block.n_queries;
      heads[h].output_error += (dense_norm > 0 ? std::sqrt(difference / dense_norm) : 0.0) / block.n_queries;
    }
  }
  return heads;
}

}  // namespace kv::reference
