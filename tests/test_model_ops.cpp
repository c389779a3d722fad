// Each kernel of the forward pass alone (engine/model/kernels.h) against
// float64 on fresh random inputs, its outputs poisoned before it runs, in the
// manner of ggml's test-backend-ops: a kernel's bug fails its own test here,
// not only a whole model's logits in test_model.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "base/half.h"
#include "formats/ggml_blocks.h"
#include "io/capture.h"
#include "model/kernels.h"
#include "model/random_weights.h"
#include "random_capture.h"
#include "test_device.h"

namespace kv {
namespace {

// Every word of an output before its kernel runs: a NaN as fp32, and as each
// half of the word in fp16 and bf16.
constexpr uint32_t kPoison = 0xffffffff;

class ModelOpsTest : public test::GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    seed_ = test::test_seed();
    rng_.seed(seed_);
  }
  std::vector<float> gaussian(size_t n, double sigma = 1.0) {
    std::normal_distribution<float> normal(0.0f, float(sigma));
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng_);
    return v;
  }
  vk::Buffer floats(const std::vector<float>& values) {
    vk::Buffer b(test::device(), values.size() * sizeof(float));
    b.upload_values<float>(values);
    return b;
  }
  vk::Buffer poisoned(size_t bytes) {
    vk::Buffer b(test::device(), bytes);
    b.fill(kPoison);
    return b;
  }
  // Runs what `record` records in a pass of its own.
  template <typename Record>
  void run(Record record) {
    vk::Pass pass(test::device());
    record(pass);
    pass.run();
  }
  // token_linear's outputs against float64: matrices `w` ([rows[i], n_in]
  // values) times x (RMSNorm'd by norm_weight where norm), with biases b and
  // residuals y0 (ungated), or SwiGLU of the first two (gated). fp32 sums in
  // any order: each output within 1e-5 of its terms' sizes (silu's slope at
  // most 1.1).
  void expect_token_linear(const std::vector<const std::vector<float>*>& w, const std::vector<uint32_t>& rows,
                           const std::vector<float>& x, const std::vector<float>& norm_weight, bool norm, float eps, bool gated,
                           const std::vector<std::vector<float>>& b, const std::vector<std::vector<float>>& y0,
                           const std::vector<vk::Buffer>& y_buffers) {
    const size_t n_in = x.size();
    double squares = 0;
    for (float v : x) squares += double(v) * v;
    const double scale = norm ? 1 / std::sqrt(squares / double(n_in) + eps) : 1.0;
    // The product of row r of matrix i with the (normalised) input, and the sum of its terms' sizes.
    auto product = [&](size_t i, uint32_t r) {
      std::pair<double, double> sum{0, 0};
      for (size_t k = 0; k < n_in; ++k) {
        const double term = double((*w[i])[size_t(r) * n_in + k]) * x[k] * (norm ? norm_weight[k] * scale : 1.0);
        sum.first += term;
        sum.second += std::abs(term);
      }
      return sum;
    };
    if (gated) {
      const std::vector<float> got = y_buffers[0].download_values<float>(rows[0]);
      for (uint32_t r = 0; r < rows[0]; ++r) {
        const auto [g, g_size] = product(0, r);
        const auto [u, u_size] = product(1, r);
        const double silu = g / (1 + std::exp(-g));
        ASSERT_NEAR(got[r], silu * u, 1e-5 * (1.1 * g_size * std::abs(u) + u_size * std::abs(silu)) + 1e-6) << "row " << r;
      }
      return;
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::vector<float> got = y_buffers[i].download_values<float>(rows[i]);
      for (uint32_t r = 0; r < rows[i]; ++r) {
        const auto [sum, size] = product(i, r);
        ASSERT_NEAR(got[r], sum + b[i][r] + y0[i][r], 1e-5 * (size + std::abs(b[i][r]) + std::abs(y0[i][r])) + 1e-30)
            << "matrix " << i << " row " << r;
      }
    }
  }
  uint32_t seed_ = 0;
  std::mt19937 rng_;
};

// Values as a storage type holds them: the stored bytes and their widened floats.
struct Stored {
  std::vector<std::byte> bytes;
  std::vector<float> values;
};
Stored stored(DType dtype, const std::vector<float>& values) {
  Stored s{from_float(dtype, values), {}};
  s.values = to_float(dtype, s.bytes);
  return s;
}

// A matrix in the storage type on the device, from its bytes.
model::DeviceMatrix plain_matrix(const std::vector<std::byte>& bytes) {
  model::DeviceMatrix m{vk::Buffer(test::device(), bytes.size()), std::nullopt};
  m.buffer.upload(bytes);
  return m;
}

class ModelOpsByType : public ModelOpsTest, public ::testing::WithParamInterface<DType> {
 protected:
  // y[t] (+)= W x[t] (+ bias) through `kernels` against float64 on fresh
  // inputs, y poisoned first unless it holds the residual.
  void expect_linear_matches(const model::ModelKernels& kernels, uint32_t n_in, uint32_t n_out, uint32_t n_tokens,
                             uint32_t input_head_dim, bool bias, bool residual, bool half_input) {
    const DType dtype = GetParam();
    const bool on_matrices = kernels.linear_on_matrices() && n_tokens > 1;
    SCOPED_TRACE("inputs " + std::to_string(n_in) + ", outputs " + std::to_string(n_out) + ", tokens " +
                 std::to_string(n_tokens) + ", head-major " + std::to_string(input_head_dim) + ", bias " + std::to_string(bias) +
                 ", residual " + std::to_string(residual) + ", matrices " + std::to_string(on_matrices) + ", fp16 inputs " +
                 std::to_string(half_input));
    const Stored w = stored(dtype, gaussian(size_t(n_out) * n_in, 0.2));
    // fp16 inputs are given as fp16 values: the products' rounding is then the kernel's alone.
    const Stored x_stored = stored(half_input ? DType::f16 : DType::f32, gaussian(size_t(n_tokens) * n_in));
    const std::vector<float>& x = x_stored.values;
    const std::vector<float> b = gaussian(n_out), y0 = gaussian(size_t(n_tokens) * n_out);
    const model::DeviceMatrix w_buffer = plain_matrix(w.bytes);
    vk::Buffer x_buffer(test::device(), x_stored.bytes.size());
    x_buffer.upload(x_stored.bytes);
    const vk::Buffer b_buffer = floats(b);
    vk::Buffer y = residual ? floats(y0) : poisoned(y0.size() * 4);
    run([&](vk::Pass& pass) {
      kernels.linear(pass, w_buffer, x_buffer, y, bias ? &b_buffer : nullptr,
                     {n_tokens, n_in, n_out, residual ? 1u : 0u, 0u, input_head_dim}, "linear", half_input);
    });
    const std::vector<float> got = y.download_values<float>(y0.size());
    for (uint32_t t = 0; t < n_tokens; ++t)
      for (uint32_t r = 0; r < n_out; ++r) {
        double want = (bias ? b[r] : 0.0) + (residual ? y0[size_t(t) * n_out + r] : 0.0), size = std::abs(want);
        for (uint32_t k = 0; k < n_in; ++k) {
          const size_t at = input_head_dim ? (size_t(k / input_head_dim) * n_tokens + t) * input_head_dim + k % input_head_dim
                                           : size_t(t) * n_in + k;
          const double product = double(w.values[size_t(r) * n_in + k]) * x[at];
          want += product;
          size += std::abs(product);
        }
        // fp32 sums in any order; on tensor cores each input rounded to fp16 first (at most
        // 2^-12 of it), so each product too.
        const double tolerance = on_matrices ? 1.0 / 4096 + 1e-5 : 1e-5;
        ASSERT_NEAR(got[size_t(t) * n_out + r], want, tolerance * size) << "token " << t << " row " << r;
      }
  }
};

TEST_P(ModelOpsByType, EmbedWidensEachTokensRow) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const DType dtype = GetParam();
  const uint32_t vocab = 37, hidden = 24;
  const std::vector<int32_t> tokens{5, 0, 36, 5, 17};
  const Stored table = stored(dtype, gaussian(size_t(vocab) * hidden));
  const model::DeviceMatrix table_buffer = plain_matrix(table.bytes);
  vk::Buffer token_buffer(test::device(), tokens.size() * 4);
  token_buffer.upload_values<int32_t>(tokens);
  vk::Buffer x = poisoned(tokens.size() * hidden * 4);
  model::ModelKernels kernels(test::device(), dtype, MatrixKernels::none);
  // From the first token, and from the second on (as a decode step reads the choice it follows).
  for (uint32_t first : {0u, 1u}) {
    const uint32_t n = uint32_t(tokens.size()) - first;
    x.fill(kPoison);
    run([&](vk::Pass& pass) { kernels.embed(pass, table_buffer, token_buffer, x, n, hidden, first); });
    const std::vector<float> got = x.download_values<float>(size_t(n) * hidden);
    for (size_t t = 0; t < n; ++t)
      for (uint32_t c = 0; c < hidden; ++c)
        ASSERT_EQ(got[t * hidden + c], table.values[size_t(tokens[first + t]) * hidden + c])
            << "first " << first << " token " << t << " channel " << c;
  }
}

// y[t] (+)= W x[t] (+ bias): one token through model_matvec, a chunk through
// the tile kernel (and the subgroup-fragment tensor-core one where the device
// has it), with a bias, onto a residual, and from a head-major input as
// attention leaves it.
TEST_P(ModelOpsByType, LinearMatchesFloat64) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const DType dtype = GetParam();
  const uint32_t n_out = 70;
  const MatrixKernels fragments = test::device().khr_cooperative_matrix() ? MatrixKernels::cooperative_matrix_khr
                                                                          : MatrixKernels::cooperative_matrix;
  const bool matrices = test::device().info().cooperative_matrix && dtype != DType::f32;
  // 600 inputs: three 16-byte pieces for some of model_matvec's lanes and a
  // last tensor-core step cut short; 46: rows off the 16-byte pieces (scalar kernels only).
  for (bool on_matrices : {false, matrices})
    for (uint32_t n_in : {48u, 600u, 46u}) {
      if (on_matrices && n_in % 8) continue;
      const uint32_t head_dim = n_in % 8 ? 2 : 8;
      const model::ModelKernels kernels(test::device(), dtype, on_matrices ? fragments : MatrixKernels::none);
      for (uint32_t n_tokens : {1u, 5u, 40u})
        for (uint32_t input_head_dim : {0u, head_dim})
          for (bool bias : {false, true})
            for (bool residual : {false, true})
              for (bool half_input : {false, true}) {
                if (half_input && !kernels.linear_takes_half_inputs(n_tokens)) continue;
                expect_linear_matches(kernels, n_in, n_out, n_tokens, input_head_dim, bias, residual, half_input);
                if (HasFatalFailure()) return;
              }
    }
}

// model_matmul_cm2 (VK_NV_cooperative_matrix2) where the device and the build
// have it: chunks of 17, 128 and 2,048 tokens (and one token, which
// model_matvec takes) over rows cut short of a tile (70, 300), channels cut
// short of a step (600) and head-major inputs of 64-channel heads (640), in
// one slice and in many (the 17- and 128-token chunks' few tiles split their
// channels), fp32 and fp16 inputs.
TEST_P(ModelOpsByType, LinearOnCooperativeMatrix2MatchesFloat64) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const DType dtype = GetParam();
  if (!cooperative_matrix2_built()) GTEST_SKIP() << "this build has no VK_NV_cooperative_matrix2 kernels (tools/build_glslang.sh)";
  if (!test::device().cooperative_matrix2())
    GTEST_SKIP() << test::device().info().name << " runs no VK_NV_cooperative_matrix2 kernels here: "
                 << describe_matrix_kernels(test::device().info(), test::device_options().validation);
  if (dtype == DType::f32) GTEST_SKIP() << "the tensor-core linear layers take 16-bit weights";
  const model::ModelKernels kernels(test::device(), dtype, MatrixKernels::cooperative_matrix2);
  for (uint32_t n_tokens : {1u, 17u, 128u, 2048u})
    for (uint32_t n_in : {600u, 640u})
      for (uint32_t n_out : {70u, 300u})
        for (uint32_t input_head_dim : {0u, 64u}) {
          if (input_head_dim && n_in % input_head_dim) continue;
          const bool half_input = n_tokens > 1 && input_head_dim == 0 && n_out == 70;
          expect_linear_matches(kernels, n_in, n_out, n_tokens, input_head_dim, n_out == 300, n_in == 640, half_input);
          if (HasFatalFailure()) return;
        }
}

// A decode step's fused linear layers (model_matvec.comp): q, k and v of
// different heights from one input in one dispatch, with biases and the
// input's RMSNorm on the way, onto a residual; and SwiGLU's gate and up with
// their product as output. Inputs of 600 and 8200 (16-byte pieces) and 46
// (pairs), each row's channels in the slices the kernel chooses (1 or 2
// here) and in 4 and 8 (600's three reads a row in 4 slices leave one empty).
TEST_P(ModelOpsByType, TokenLinearMatchesFloat64) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const DType dtype = GetParam();
  const model::ModelKernels kernels(test::device(), dtype, MatrixKernels::none);
  const float eps = 1e-5f;
  for (uint32_t n_in : {600u, 8200u, 46u})
    for (uint32_t slices : {0u, 4u, 8u})
      for (bool gated : {false, true})
        for (bool norm : {false, true}) {
          SCOPED_TRACE("inputs " + std::to_string(n_in) + ", slices " + std::to_string(slices) + (gated ? ", gated" : "") +
                       (norm ? ", norm" : ""));
          const std::vector<uint32_t> rows = gated ? std::vector<uint32_t>{37, 37} : std::vector<uint32_t>{37, 16, 9};
          const bool accumulate = !gated;
          const std::vector<float> x = gaussian(n_in, 2.0), norm_weight = gaussian(n_in);
          const vk::Buffer x_buffer = floats(x), norm_buffer = floats(norm_weight);
          std::vector<Stored> w;
          std::vector<std::vector<float>> b, y0;
          std::vector<model::DeviceMatrix> w_buffers;
          std::vector<vk::Buffer> b_buffers, y_buffers;
          for (uint32_t r : rows) {
            w.push_back(stored(dtype, gaussian(size_t(r) * n_in, 0.2)));
            b.push_back(gaussian(r));
            y0.push_back(gaussian(r));
            w_buffers.push_back(plain_matrix(w.back().bytes));
            b_buffers.push_back(floats(b.back()));
            y_buffers.push_back(accumulate ? floats(y0.back()) : poisoned(r * 4));
          }
          std::vector<model::ModelKernels::TokenProjection> projections;
          for (size_t i = 0; i < rows.size(); ++i)
            projections.push_back({&w_buffers[i], &y_buffers[i], gated ? nullptr : &b_buffers[i], rows[i]});
          run([&](vk::Pass& pass) {
            kernels.token_linear(pass, projections, x_buffer, n_in, norm ? &norm_buffer : nullptr, eps, gated, accumulate, "linear",
                                 slices);
          });
          std::vector<const std::vector<float>*> values;
          for (const Stored& m : w) values.push_back(&m.values);
          expect_token_linear(values, rows, x, norm_weight, norm, eps, gated, b, y0, y_buffers);
          if (HasFatalFailure()) return;
        }
}

// A decode step's RoPE taken in its q/k/v dispatch (token_linear's rope: the
// last workgroup to finish a head rotates it) writes the same bytes as the
// product and model_rope.comp in two dispatches, which the cases around it
// hold to float64: heads of 8 (two a workgroup), 24 (straddling workgroups),
// each row's channels in 1, 2 and 8 slices, both pairings, queries kept or
// not; every other cache position keeps its poison. The fused dispatch runs
// twice, its outputs poisoned again before the second, so that the heads'
// row counts are seen to return to zero.
TEST_P(ModelOpsByType, TokenLinearRopeMatchesTwoDispatches) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const DType dtype = GetParam();
  const model::ModelKernels kernels(test::device(), dtype, MatrixKernels::none);
  const uint32_t H = 4, G = 2, n_in = 600, position = 5, capacity = 12;
  const size_t element = dtype_size(dtype);
  for (uint32_t d : {8u, 24u})
    for (uint32_t slices : {1u, 2u, 8u})
      for (bool interleaved : {false, true}) {
        const bool keep = !(slices == 2 && interleaved);
        SCOPED_TRACE("head dim " + std::to_string(d) + ", slices " + std::to_string(slices) +
                     (interleaved ? ", interleaved pairs" : ", halves") + (keep ? ", queries kept" : ""));
        const std::vector<float> x = gaussian(n_in, 2.0), norm_weight = gaussian(n_in);
        std::vector<float> rotations(size_t(capacity) * d);
        for (size_t i = 0; i < rotations.size() / 2; ++i) {
          const double angle = std::uniform_real_distribution<double>(-3.2, 3.2)(rng_);
          rotations[2 * i] = float(std::cos(angle));
          rotations[2 * i + 1] = float(std::sin(angle));
        }
        const vk::Buffer x_buffer = floats(x), norm_buffer = floats(norm_weight), rotation_buffer = floats(rotations);
        const uint32_t rows[3] = {H * d, G * d, G * d};
        std::vector<model::DeviceMatrix> w_buffers;
        std::vector<vk::Buffer> b_buffers, y_buffers;
        for (uint32_t r : rows) {
          const Stored w = stored(dtype, gaussian(size_t(r) * n_in, 0.2));
          w_buffers.push_back(plain_matrix(w.bytes));
          b_buffers.push_back(floats(gaussian(r)));
          y_buffers.push_back(poisoned(r * 4));
        }
        std::vector<model::ModelKernels::TokenProjection> projections;
        for (size_t i = 0; i < 3; ++i) projections.push_back({&w_buffers[i], &y_buffers[i], &b_buffers[i], rows[i]});
        const layouts::ModelRopePush push{1, H, G, d, position, capacity, interleaved ? 1u : 0u, keep ? 1u : 0u};
        // queries, key cache, value cache, kept queries: poisoned, then written one way or the other.
        auto outputs = [&] {
          std::vector<vk::Buffer> b;
          for (size_t bytes : {size_t(H) * d, size_t(G) * capacity * d, size_t(G) * capacity * d, size_t(H) * capacity * d})
            b.push_back(poisoned(bytes * element));
          return b;
        };
        std::vector<vk::Buffer> fused, apart = outputs();
        auto rope_buffers = [&](std::vector<vk::Buffer>& b) {
          return model::ModelKernels::RopeBuffers{&y_buffers[0], &y_buffers[1], &y_buffers[2], &rotation_buffer,
                                                  &b[0],         &b[1],         &b[2],         &b[3]};
        };
        for (int step = 0; step < 2; ++step) {
          fused = outputs();
          const model::ModelKernels::TokenRope token_rope{rope_buffers(fused), push};
          run([&](vk::Pass& pass) {
            kernels.token_linear(pass, projections, x_buffer, n_in, &norm_buffer, 1e-5f, false, false, "qkv", slices,
                                 &token_rope);
          });
        }
        run([&](vk::Pass& pass) {
          kernels.token_linear(pass, projections, x_buffer, n_in, &norm_buffer, 1e-5f, false, false, "qkv", slices);
          kernels.rope(pass, rope_buffers(apart), push);
        });
        const char* names[4] = {"queries", "key cache", "value cache", "kept queries"};
        for (size_t i = 0; i < 4; ++i) {
          std::vector<std::byte> got(fused[i].bytes()), want(apart[i].bytes());
          fused[i].download(got);
          apart[i].download(want);
          ASSERT_EQ(got, want) << names[i];
        }
      }
}

// RoPE for a chunk at positions 5..7 of a cache of 12: q rotated into the
// queries and the kept queries, k rotated and v copied into the cache at
// their positions, both pairings; every other cache position left alone.
TEST_P(ModelOpsByType, RopeRotatesIntoTheCache) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const DType dtype = GetParam();
  const uint32_t n = 3, H = 4, G = 2, d = 16, first = 5, capacity = 12;
  // A 16-bit type rounds each output once: half an ulp of its largest value.
  // float32 arithmetic errs relative to the rotation's two terms, not to their
  // difference: seed 3142592188 gave -0.00846 from terms near 1, 1.1e-7 off.
  const double tolerance = dtype == DType::f32 ? 1e-6 : dtype == DType::f16 ? 1e-3 : 8e-3;
  for (bool interleaved : {false, true}) {
    SCOPED_TRACE(interleaved ? "interleaved pairs" : "halves");
    const std::vector<float> q = gaussian(size_t(n) * H * d), k = gaussian(size_t(n) * G * d), v = gaussian(size_t(n) * G * d);
    std::vector<float> rotations(size_t(capacity) * d);  // (cos, sin) of random angles
    for (size_t i = 0; i < rotations.size() / 2; ++i) {
      const double angle = std::uniform_real_distribution<double>(-3.2, 3.2)(rng_);
      rotations[2 * i] = float(std::cos(angle));
      rotations[2 * i + 1] = float(std::sin(angle));
    }
    const vk::Buffer q_buffer = floats(q), k_buffer = floats(k), v_buffer = floats(v), rotation_buffer = floats(rotations);
    const size_t element = dtype_size(dtype);
    vk::Buffer queries = poisoned(size_t(H) * n * d * element), keys = poisoned(size_t(G) * capacity * d * element);
    vk::Buffer values = poisoned(size_t(G) * capacity * d * element), kept = poisoned(size_t(H) * capacity * d * element);
    const model::ModelKernels kernels(test::device(), dtype, MatrixKernels::none);
    run([&](vk::Pass& pass) {
      kernels.rope(pass, {&q_buffer, &k_buffer, &v_buffer, &rotation_buffer, &queries, &keys, &values, &kept},
                   {n, H, G, d, first, capacity, interleaved ? 1u : 0u, 1u});
    });
    auto widened = [&](const vk::Buffer& b, size_t count) {
      std::vector<std::byte> bytes(count * element);
      b.download(bytes);
      return to_float(dtype, bytes);
    };
    // Channel c of a row of d channels, rotated for `position`, in float64,
    // and the size of its two terms.
    struct Rotated {
      double value, terms;
    };
    auto rotate = [&](const float* row, uint32_t c, uint32_t position) -> Rotated {
      const uint32_t half = d / 2;
      const uint32_t partner = interleaved ? c ^ 1u : (c < half ? c + half : c - half);
      const uint32_t frequency = interleaved ? c / 2 : c % half;
      const double cosine = rotations[(size_t(position) * half + frequency) * 2], sine = rotations[(size_t(position) * half + frequency) * 2 + 1];
      const bool first_of_pair = interleaved ? c % 2 == 0 : c < half;
      const double terms = std::abs(row[c] * cosine) + std::abs(row[partner] * sine);
      return {first_of_pair ? row[c] * cosine - row[partner] * sine : row[c] * cosine + row[partner] * sine, terms};
    };
    const std::vector<float> got_q = widened(queries, size_t(H) * n * d), got_kept = widened(kept, size_t(H) * capacity * d);
    const std::vector<float> got_k = widened(keys, size_t(G) * capacity * d), got_v = widened(values, size_t(G) * capacity * d);
    for (uint32_t t = 0; t < n; ++t)
      for (uint32_t c = 0; c < d; ++c) {
        for (uint32_t h = 0; h < H; ++h) {
          const Rotated want = rotate(&q[(size_t(t) * H + h) * d], c, first + t);
          ASSERT_NEAR(got_q[(size_t(h) * n + t) * d + c], want.value, tolerance * (want.terms + 0.1)) << "q head " << h;
          ASSERT_EQ(got_kept[(size_t(h) * capacity + first + t) * d + c], got_q[(size_t(h) * n + t) * d + c]) << "kept q head " << h;
        }
        for (uint32_t g = 0; g < G; ++g) {
          const Rotated want_k = rotate(&k[(size_t(t) * G + g) * d], c, first + t);
          const double want_v = v[(size_t(t) * G + g) * d + c];
          const size_t at = (size_t(g) * capacity + first + t) * d + c;
          ASSERT_NEAR(got_k[at], want_k.value, tolerance * (want_k.terms + 0.1)) << "k head " << g;
          ASSERT_NEAR(got_v[at], want_v, tolerance * (std::abs(want_v) + 0.1)) << "v head " << g;
        }
      }
    // The positions outside the chunk keep their poison (a NaN in every type).
    for (uint32_t g = 0; g < G; ++g)
      for (uint32_t p = 0; p < capacity; ++p)
        if (p < first || p >= first + n) {
          ASSERT_TRUE(std::isnan(got_k[(size_t(g) * capacity + p) * d])) << "cache position " << p;
        }
  }
}

// Random weights drawn on the device, bit for bit the host twin's
// (model/random_weights.h), over a tensor larger than one grid-stride pass.
TEST_P(ModelOpsByType, RandomFillMatchesItsHostTwin) {
  const DType dtype = GetParam();
  const uint32_t key = model::random_weight_key(seed_, 7);
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const size_t count = 4096 * 256 * 2 * 2 + 6;  // past 4096 workgroups' first pass, in every type
  const std::vector<std::byte> want = model::random_weight_bytes(dtype, key, count);
  model::DeviceMatrix weights{poisoned((want.size() + 3) / 4 * 4), std::nullopt};
  const model::ModelKernels kernels(test::device(), dtype, MatrixKernels::none);
  run([&](vk::Pass& pass) { kernels.random_fill(pass, weights, key); });
  std::vector<std::byte> got(want.size());
  weights.buffer.download(got);
  ASSERT_TRUE(got == want) << "the device's random weights differ from the host twin's";
  const std::vector<float> values = to_float(dtype, want);
  double sum = 0, squares = 0;
  for (float v : values) sum += v, squares += double(v) * v;
  EXPECT_NEAR(sum / count, 0.0, 1e-3);
  EXPECT_NEAR(std::sqrt(squares / count), 1.0 / 32 / std::sqrt(3.0), 1e-3);  // uniform over [-1/32, 1/32)
}

INSTANTIATE_TEST_SUITE_P(Types, ModelOpsByType, ::testing::Values(DType::f32, DType::f16, DType::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// The kernels that read weights, on matrices of ggml blocks (a quantized
// file's, fp16 storage): random bytes in every field, each fp16 scale a
// random finite value, held to float64 over formats::dequantize's values (the
// CPU reference, bit for bit ggml's own: test_ggml_blocks.cpp).
using formats::GgmlType;
class BlockOpsTest : public ModelOpsTest {
 protected:
  formats::BlockLayout layout(GgmlType type) const { return *formats::block_layout(uint32_t(type)); }
  // `values` (whole blocks) of random blocks: the scales' signs, sizes
  // (2^-18 .. 2^-4, subnormal ones too) and zeros drawn, so that a widened
  // value stays within fp16.
  std::vector<std::byte> random_blocks(GgmlType type, size_t values) {
    const formats::BlockLayout l = layout(type);
    std::vector<std::byte> bytes(values / l.elements * l.bytes);
    std::uniform_int_distribution<int> byte(0, 255);
    for (std::byte& b : bytes) b = std::byte(byte(rng_));
    std::vector<uint32_t> scales;  // the fp16 scales' offsets in a block
    switch (type) {
      case GgmlType::q4_1: case GgmlType::q5_1: case GgmlType::q4_k: case GgmlType::q5_k: scales = {0, 2}; break;
      case GgmlType::q2_k: scales = {80, 82}; break;
      case GgmlType::q3_k: scales = {108}; break;
      case GgmlType::q6_k: scales = {208}; break;
      default: scales = {0};
    }
    std::uniform_real_distribution<double> exponent(-18.0, -4.0);
    for (size_t block = 0; block < bytes.size() / l.bytes; ++block)
      for (uint32_t at : scales) {
        const bool zero = byte(rng_) < 16, negative = byte(rng_) < 128;
        const uint16_t h = zero ? 0 : float_to_half(float((negative ? -1 : 1) * std::exp2(exponent(rng_))));
        bytes[block * l.bytes + at] = std::byte(h & 0xff);
        bytes[block * l.bytes + at + 1] = std::byte(h >> 8);
      }
    return bytes;
  }
  model::DeviceMatrix blocks_on_device(GgmlType type, const std::vector<std::byte>& bytes) {
    model::DeviceMatrix m{vk::Buffer(test::device(), (bytes.size() + 3) / 4 * 4 + 4), type};
    m.buffer.fill(kPoison);
    m.buffer.upload(bytes);
    return m;
  }
  std::vector<float> dequantized(GgmlType type, const std::vector<std::byte>& bytes) {
    std::vector<float> values(bytes.size() / layout(type).bytes * layout(type).elements);
    formats::dequantize(type, bytes, values);
    return values;
  }
  // Another type than `type` of the same block size, for products mixing types.
  static GgmlType other(GgmlType type, int n) {
    const bool k = formats::block_layout(uint32_t(type))->elements == 256;
    const GgmlType k_types[] = {GgmlType::q6_k, GgmlType::q4_k, GgmlType::q3_k};
    const GgmlType legacy[] = {GgmlType::q8_0, GgmlType::q4_1, GgmlType::q5_0};
    return k ? k_types[n % 3] : legacy[n % 3];
  }
};

class ModelOpsByBlocks : public BlockOpsTest, public ::testing::WithParamInterface<GgmlType> {};

// A decode step's products of blocks read by model_matvec.comp itself (the
// GPUs' path, turned on here): q, k and v of three types in one dispatch,
// with biases and the input's RMSNorm, onto a residual; SwiGLU's gate and up
// in two types and in one; rows of 768 inputs (three 256-value blocks, 24 of 32), and
// of 96 where every type has 32-value blocks. Every type in four mixes, each
// a pipeline (lavapipe compiles one in 8-17 s: mixes, not a type a test),
// the kernel's slices and 8 (on the gated mix of one type).
TEST_F(BlockOpsTest, TokenLinearReadsEveryTypeAsFloat64Does) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  model::ModelKernels kernels(test::device(), DType::f16, MatrixKernels::none);
  kernels.set_matvec_reads_blocks(true);
  const float eps = 1e-5f;
  const GgmlType mixes[4][3] = {{GgmlType::q8_0, GgmlType::q4_0, GgmlType::q4_1},
                                {GgmlType::q5_0, GgmlType::q5_1, GgmlType::q2_k},
                                {GgmlType::q3_k, GgmlType::q4_k, GgmlType::q3_k},   // gated too: (q3_k, q4_k), the same pipeline
                                {GgmlType::q5_k, GgmlType::q5_k, GgmlType::q6_k}};  // gated: one type, the input shared
  for (size_t mix = 0; mix < 4; ++mix)
    for (uint32_t n_in : {768u, 96u})
      for (uint32_t slices : {0u, 8u})
        for (bool gated : {false, true})
          for (bool norm : {false, true}) {
            const GgmlType* types = mixes[mix];
            // Slices on one case, its own pipeline anyway: gate and up of one type (a lane's input shared).
            if ((n_in == 96 && mix != 0) || (gated && mix < 2) || ((slices == 8) != (gated && mix == 3))) continue;
            SCOPED_TRACE(std::string(layout(types[0]).name) + ", " + layout(types[1]).name + ", " + layout(types[2]).name +
                         ": inputs " + std::to_string(n_in) + ", slices " + std::to_string(slices) + (gated ? ", gated" : "") +
                         (norm ? ", norm" : ""));
            const std::vector<uint32_t> rows = gated ? std::vector<uint32_t>{37, 37} : std::vector<uint32_t>{37, 16, 9};
            const std::vector<float> x = gaussian(n_in, 2.0), norm_weight = gaussian(n_in);
            const vk::Buffer x_buffer = floats(x), norm_buffer = floats(norm_weight);
            std::vector<std::vector<float>> w, b, y0;
            std::vector<model::DeviceMatrix> w_buffers;
            std::vector<vk::Buffer> b_buffers, y_buffers;
            for (size_t i = 0; i < rows.size(); ++i) {
              const std::vector<std::byte> bytes = random_blocks(types[i], size_t(rows[i]) * n_in);
              w.push_back(dequantized(types[i], bytes));
              w_buffers.push_back(blocks_on_device(types[i], bytes));
              b.push_back(gaussian(rows[i]));
              y0.push_back(gaussian(rows[i]));
              b_buffers.push_back(floats(b.back()));
              y_buffers.push_back(gated ? poisoned(rows[i] * 4) : floats(y0.back()));
            }
            std::vector<model::ModelKernels::TokenProjection> projections;
            for (size_t i = 0; i < rows.size(); ++i)
              projections.push_back({&w_buffers[i], &y_buffers[i], gated ? nullptr : &b_buffers[i], rows[i]});
            run([&](vk::Pass& pass) {
              kernels.token_linear(pass, projections, x_buffer, n_in, norm ? &norm_buffer : nullptr, eps, gated, !gated, "linear",
                                   slices);
            });
            std::vector<const std::vector<float>*> values;
            for (const std::vector<float>& m : w) values.push_back(&m);
            // Each value within a rounding of the reference's too (a fused multiply-add where ggml rounds twice).
            expect_token_linear(values, rows, x, norm_weight, norm, eps, gated, b, y0, y_buffers);
            if (HasFatalFailure()) return;
          }
}

// A product of blocks through linear(): a chunk's widened to fp16 in the
// scratch (model_dequantize.comp), then the chunk kernels (the tile kernel,
// and the tensor-core one where the device has it); one token's too on this
// device's path (lavapipe: widened, then model_matvec in fp16).
TEST_P(ModelOpsByBlocks, LinearMatchesFloat64) {
  const GgmlType type = GetParam();
  SCOPED_TRACE("seed " + std::to_string(seed_) + ", " + layout(type).name);
  const uint32_t n_in = 512, n_out = 70;
  const MatrixKernels fragments = test::device().khr_cooperative_matrix() ? MatrixKernels::cooperative_matrix_khr
                                                                          : MatrixKernels::cooperative_matrix;
  const std::vector<std::byte> bytes = random_blocks(type, size_t(n_out) * n_in);
  const std::vector<float> w = dequantized(type, bytes);
  const model::DeviceMatrix matrix = blocks_on_device(type, bytes);
  for (bool on_matrices : {false, test::device().info().cooperative_matrix}) {
    model::ModelKernels kernels(test::device(), DType::f16, on_matrices ? fragments : MatrixKernels::none);
    kernels.reserve_widened(size_t(n_out) * n_in);
    for (uint32_t n_tokens : {1u, 5u, 40u}) {
      SCOPED_TRACE("tokens " + std::to_string(n_tokens) + (on_matrices ? ", tensor cores" : ""));
      const std::vector<float> x = gaussian(size_t(n_tokens) * n_in), bias = gaussian(n_out);
      const vk::Buffer x_buffer = floats(x), b_buffer = floats(bias);
      vk::Buffer y = poisoned(size_t(n_tokens) * n_out * 4);
      run([&](vk::Pass& pass) { kernels.linear(pass, matrix, x_buffer, y, &b_buffer, {n_tokens, n_in, n_out, 0, 0, 0}, "linear"); });
      const std::vector<float> got = y.download_values<float>(size_t(n_tokens) * n_out);
      // A chunk's weights rounded to fp16 first (2^-11 of each), and on tensor
      // cores its inputs too; fp32 sums.
      const bool widened = n_tokens > 1 || !kernels.matvec_reads_blocks();
      const double tolerance = !widened ? 1e-5 : on_matrices && n_tokens > 1 ? 2.0 / 2048 + 1e-5 : 1.0 / 2048 + 1e-5;
      for (uint32_t t = 0; t < n_tokens; ++t)
        for (uint32_t r = 0; r < n_out; ++r) {
          double want = bias[r], size = std::abs(bias[r]);
          for (uint32_t k = 0; k < n_in; ++k) {
            const double term = double(w[size_t(r) * n_in + k]) * x[size_t(t) * n_in + k];
            want += term;
            size += std::abs(term);
          }
          ASSERT_NEAR(got[size_t(t) * n_out + r], want, tolerance * size + 1e-30) << "token " << t << " row " << r;
        }
    }
  }
}

// The embedding lookup of a table of blocks, and the chunk's widening to fp16:
// every value within a rounding of the reference's, nothing past the end written.
TEST_P(ModelOpsByBlocks, EmbedAndDequantizeMatchTheReference) {
  const GgmlType type = GetParam();
  SCOPED_TRACE("seed " + std::to_string(seed_) + ", " + layout(type).name);
  const uint32_t vocab = 11, hidden = 512;
  const std::vector<std::byte> bytes = random_blocks(type, size_t(vocab) * hidden);
  const std::vector<float> table = dequantized(type, bytes);
  const model::DeviceMatrix matrix = blocks_on_device(type, bytes);
  const model::ModelKernels kernels(test::device(), DType::f16, MatrixKernels::none);
  const std::vector<int32_t> tokens{3, 0, 10, 3, 7};
  vk::Buffer token_buffer(test::device(), tokens.size() * 4);
  token_buffer.upload_values<int32_t>(tokens);
  vk::Buffer x = poisoned(tokens.size() * hidden * 4), widened = poisoned(table.size() * 2 + 16);
  run([&](vk::Pass& pass) {
    kernels.embed(pass, matrix, token_buffer, x, uint32_t(tokens.size()), hidden);
    kernels.dequantize(pass, matrix, widened, table.size());
  });
  // A value's rounding against the block's scales: 2^-22 of the row's largest.
  auto largest = [&](size_t row) {
    float m = 0;
    for (uint32_t c = 0; c < hidden; ++c) m = std::max(m, std::abs(table[row * hidden + c]));
    return double(m);
  };
  const std::vector<float> got = x.download_values<float>(tokens.size() * hidden);
  for (size_t t = 0; t < tokens.size(); ++t)
    for (uint32_t c = 0; c < hidden; ++c)
      ASSERT_NEAR(got[t * hidden + c], table[size_t(tokens[t]) * hidden + c], largest(size_t(tokens[t])) * 0x1p-22 + 1e-30)
          << "token " << t << " channel " << c;
  std::vector<std::byte> raw(widened.bytes());
  widened.download(raw);
  for (size_t i = 0; i < table.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, raw.data() + 2 * i, 2);
    // fp16's rounding: 2^-11 of the value, or half its smallest step (2^-25).
    ASSERT_NEAR(half_to_float(h), table[i], std::abs(table[i]) * 0x1p-11 + largest(i / hidden) * 0x1p-22 + 0x1p-25) << "value " << i;
  }
  for (size_t i = table.size() * 2; i < raw.size(); ++i) ASSERT_EQ(raw[i], std::byte(0xff)) << "byte " << i << " past the matrix";
}

// Random weights drawn as blocks on the device, bit for bit the host twin's
// (write_gguf.py's --type draws the same), over more than one grid-stride
// pass; their values finite and within the fixed scales' reach.
TEST_P(ModelOpsByBlocks, RandomFillMatchesItsHostTwin) {
  const GgmlType type = GetParam();
  const uint32_t key = model::random_weight_key(seed_, 9);
  SCOPED_TRACE("seed " + std::to_string(seed_) + ", " + layout(type).name);
  const size_t values = size_t(4096) * 256 * 4 * 2, bytes = values / layout(type).elements * layout(type).bytes;
  const std::vector<std::byte> want = model::random_block_bytes(type, key, bytes);
  model::DeviceMatrix weights{poisoned(bytes), type};
  const model::ModelKernels kernels(test::device(), DType::f16, MatrixKernels::none);
  run([&](vk::Pass& pass) { kernels.random_fill(pass, weights, key); });
  std::vector<std::byte> got(bytes);
  weights.buffer.download(got);
  ASSERT_TRUE(got == want) << "the device's random blocks differ from the host twin's";
  std::vector<float> v(values);
  formats::dequantize(type, want, v);
  double squares = 0;
  for (float value : v) {
    ASSERT_TRUE(std::isfinite(value));
    ASSERT_LT(std::abs(value), 0.5);
    squares += double(value) * value;
  }
  EXPECT_GT(std::sqrt(squares / double(values)), 1e-3);  // not all zero: the fp16 draw's scale is 0.018
}

INSTANTIATE_TEST_SUITE_P(Blocks, ModelOpsByBlocks,
                         ::testing::Values(GgmlType::q8_0, GgmlType::q4_0, GgmlType::q4_1, GgmlType::q5_0, GgmlType::q5_1,
                                           GgmlType::q2_k, GgmlType::q3_k, GgmlType::q4_k, GgmlType::q5_k, GgmlType::q6_k),
                         [](const auto& info) { return std::string(formats::block_layout(uint32_t(info.param))->name); });

// Four rows of 300 channels (more than a workgroup's 256 lanes), the last
// three normalised: y[t] = x[1 + t] / sqrt(mean(x^2) + eps) * w.
TEST_F(ModelOpsTest, RmsNormMatchesFloat64) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const uint32_t hidden = 300, rows = 4, first = 1, n = 3;
  const float eps = 1e-5f;
  const std::vector<float> x = gaussian(size_t(rows) * hidden, 3.0), w = gaussian(hidden);
  const vk::Buffer x_buffer = floats(x), w_buffer = floats(w);
  const model::ModelKernels kernels(test::device(), DType::f32, MatrixKernels::none);
  for (bool half : {false, true}) {  // fp32, or fp16 for a tensor-core linear layer (rounded once)
  SCOPED_TRACE(half ? "fp16 output" : "fp32 output");
  vk::Buffer y = poisoned(size_t(n) * hidden * 4);
  run([&](vk::Pass& pass) { kernels.rmsnorm(pass, x_buffer, w_buffer, y, n, first, hidden, eps, half); });
  std::vector<float> got;
  if (half) {
    std::vector<std::byte> bytes(size_t(n) * hidden * 2);
    y.download(bytes);
    got = to_float(DType::f16, bytes);
  } else {
    got = y.download_values<float>(size_t(n) * hidden);
  }
  const double rounding = half ? 1.0 / 2048 : 1e-5;
  for (uint32_t t = 0; t < n; ++t) {
    const float* row = &x[size_t(first + t) * hidden];
    double squares = 0;
    for (uint32_t c = 0; c < hidden; ++c) squares += double(row[c]) * row[c];
    const double inverse = 1 / std::sqrt(squares / hidden + eps);
    for (uint32_t c = 0; c < hidden; ++c) {
      const double want = row[c] * inverse * w[c];
      ASSERT_NEAR(got[size_t(t) * hidden + c], want, rounding * std::abs(want) + 1e-7) << "row " << t << " channel " << c;
    }
  }
  }
}

// More rows than a dispatch dimension's 65,535 workgroups (Qwen3's heads of a
// long chunk: 2,048 tokens x 32 heads), normed in place as Qwen3's are.
TEST_F(ModelOpsTest, RmsNormTakesRowsPastOneDispatchDimension) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const uint32_t hidden = 8, rows = 65537;
  const float eps = 1e-6f;
  const std::vector<float> x = gaussian(size_t(rows) * hidden), w = gaussian(hidden);
  vk::Buffer x_buffer = floats(x);
  const vk::Buffer w_buffer = floats(w);
  const model::ModelKernels kernels(test::device(), DType::f32, MatrixKernels::none);
  run([&](vk::Pass& pass) { kernels.rmsnorm(pass, x_buffer, w_buffer, x_buffer, rows, 0, hidden, eps); });
  const std::vector<float> got = x_buffer.download_values<float>(x.size());
  for (uint32_t t = 0; t < rows; ++t) {
    double squares = 0;
    for (uint32_t c = 0; c < hidden; ++c) squares += double(x[size_t(t) * hidden + c]) * x[size_t(t) * hidden + c];
    const double inverse = 1 / std::sqrt(squares / hidden + eps);
    for (uint32_t c = 0; c < hidden; ++c) {
      const double want = x[size_t(t) * hidden + c] * inverse * w[c];
      ASSERT_NEAR(got[size_t(t) * hidden + c], want, 1e-5 * std::abs(want) + 1e-6) << "row " << t << " channel " << c;
    }
  }
}

TEST_F(ModelOpsTest, SwigluMatchesFloat64) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const uint32_t count = 1000;  // not a multiple of the workgroup's 512
  const std::vector<float> gate = gaussian(count, 4.0), up = gaussian(count);
  const vk::Buffer up_buffer = floats(up);
  const model::ModelKernels kernels(test::device(), DType::f32, MatrixKernels::none);
  // In place in fp32, and into another buffer in fp16 (rounded once).
  for (bool half : {false, true}) {
    SCOPED_TRACE(half ? "fp16 output" : "fp32 output, in place");
    vk::Buffer gate_buffer = floats(gate), h = poisoned(count * 2);
    run([&](vk::Pass& pass) { kernels.swiglu(pass, gate_buffer, up_buffer, half ? h : gate_buffer, count, half); });
    std::vector<float> got;
    if (half) {
      std::vector<std::byte> bytes(count * 2);
      h.download(bytes);
      got = to_float(DType::f16, bytes);
    } else {
      got = gate_buffer.download_values<float>(count);
    }
    const double rounding = half ? 1.0 / 2048 : 1e-5;
    for (uint32_t i = 0; i < count; ++i) {
      const double g = gate[i], want = g / (1 + std::exp(-g)) * up[i];
      ASSERT_NEAR(got[i], want, rounding * std::abs(want) + 1e-7) << "element " << i;
    }
  }
}

// The first index of the largest logit: a tie goes to the lower index, NaN
// counts as the least, and a row of NaN chooses index 0.
TEST_F(ModelOpsTest, ArgmaxTakesTheFirstLargest) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const uint32_t n = 1000;
  const model::ModelKernels kernels(test::device(), DType::f32, MatrixKernels::none);
  // Into a slot of its own, the others untouched.
  const uint32_t slot = std::uniform_int_distribution<uint32_t>(0, 2)(rng_);
  auto choose = [&](const std::vector<float>& logits) {
    const vk::Buffer logit_buffer = floats(logits);
    vk::Buffer chosen = poisoned(3 * 4);
    run([&](vk::Pass& pass) { kernels.argmax(pass, logit_buffer, chosen, uint32_t(logits.size()), slot); });
    const std::vector<int32_t> slots = chosen.download_values<int32_t>(3);
    for (uint32_t i = 0; i < 3; ++i)
      if (i != slot) {
        EXPECT_EQ(uint32_t(slots[i]), kPoison) << "slot " << i;
      }
    return slots[slot];
  };
  std::vector<float> logits = gaussian(n);
  const uint32_t low = std::uniform_int_distribution<uint32_t>(1, n / 2)(rng_), high = low + n / 3;
  logits[low] = logits[high] = 10.0f;
  for (uint32_t i = 0; i < n; i += 7) logits[i] = std::numeric_limits<float>::quiet_NaN();
  logits[low] = logits[high] = 10.0f;
  EXPECT_EQ(choose(logits), int32_t(low));
  EXPECT_EQ(choose(std::vector<float>(n, std::numeric_limits<float>::quiet_NaN())), 0);
  EXPECT_EQ(choose({-std::numeric_limits<float>::infinity(), -5.0f}), 1);
}

}  // namespace
}  // namespace kv
