#include "ggml_ops.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <stdexcept>

#include "ggml-alloc.h"
#include "ggml.h"

namespace peer {
namespace {

// Deterministic values uniform in [-scale, scale): what they are does not change a product's time.
std::vector<float> uniform(size_t n, float scale, uint32_t seed) {
  std::vector<float> v(n);
  uint64_t x = 0x9e3779b97f4a7c15ull ^ seed;
  for (float& f : v) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    f = scale * (float(uint32_t(x >> 40)) / float(1u << 24) * 2.0f - 1.0f);
  }
  return v;
}

void set(ggml_tensor* t, const std::vector<float>& values) {
  if (t->type == GGML_TYPE_F32) {
    ggml_backend_tensor_set(t, values.data(), 0, values.size() * sizeof(float));
    return;
  }
  std::vector<ggml_fp16_t> half(values.size());
  ggml_fp32_to_fp16_row(values.data(), half.data(), int64_t(values.size()));
  ggml_backend_tensor_set(t, half.data(), 0, half.size() * sizeof(ggml_fp16_t));
}

// ggml's Vulkan perf logger (GGML_VK_PERF_LOGGER, read when the backend
// starts) writes each compute's GPU time, from timestamps around each node,
// to std::cerr as "Total time: T us."; this reads them back from the stderr
// of the computes in between.
class GpuTimes {
 public:
  GpuTimes() {
    if (!on()) return;
    std::fflush(stderr);
    std::cerr.flush();
    char path[] = "/tmp/llamacpp_peer_XXXXXX";
    fd_ = mkstemp(path);
    if (fd_ < 0) return;
    path_ = path;
    saved_ = dup(2);
    dup2(fd_, 2);
  }
  // The mean of the computes' GPU microseconds, 0 without the logger.
  double mean_us() {
    if (fd_ < 0) return 0;
    std::cerr.flush();
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    close(fd_);
    fd_ = -1;
    std::ifstream log(path_);
    double sum = 0;
    int n = 0;
    for (std::string line; std::getline(log, line);)
      if (line.rfind("Total time: ", 0) == 0) sum += std::strtod(line.c_str() + 12, nullptr), ++n;
    std::remove(path_.c_str());
    return n ? sum / n : 0;
  }
  ~GpuTimes() { mean_us(); }
  static bool on() { return std::getenv("GGML_VK_PERF_LOGGER") != nullptr; }

 private:
  int fd_ = -1, saved_ = -1;
  std::string path_;
};

// A backend of its own on `device`, a context for a few tensors and one
// graph, their data on the backend: build makes the inputs and the
// operation, fill gives the inputs values once allocated. Each compute waits
// for the last (ggml's Vulkan backend does not take the same graph again
// before it has finished), so the wall time holds a submission and a wait
// each; the perf logger's, where it is on, only the operation's own. (With
// the perf logger on, a FLASH_ATTN_EXT after a MUL_MAT on the same backend
// corrupted the heap now and then on lavapipe; a backend an operation did not.)
void time_op(ggml_backend_dev_t device, uint32_t repeat, OpTime& t,
             const std::function<ggml_tensor*(ggml_context*)>& build, const std::function<void()>& fill) {
  ggml_backend_t backend = ggml_backend_dev_init(device, nullptr);
  if (!backend) throw std::runtime_error("ggml_backend_dev_init failed");
  ggml_init_params params{16 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, true};
  ggml_context* ctx = ggml_init(params);
  if (!ctx) throw std::runtime_error("ggml_init failed");
  ggml_tensor* out = build(ctx);
  ggml_backend_buffer_t buffer = ggml_backend_alloc_ctx_tensors(ctx, backend);
  if (!buffer) {
    ggml_free(ctx);
    ggml_backend_free(backend);
    throw std::runtime_error("ggml_backend_alloc_ctx_tensors failed: the device's memory?");
  }
  fill();
  ggml_cgraph* graph = ggml_new_graph(ctx);
  ggml_build_forward_expand(graph, out);
  {
    GpuTimes quiet;  // the untimed computes' log lines go nowhere
    for (int i = 0; i < 3; ++i)
      if (ggml_backend_graph_compute(backend, graph) != GGML_STATUS_SUCCESS)
        throw std::runtime_error("graph compute failed");
  }
  GpuTimes gpu;
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < repeat; ++i) ggml_backend_graph_compute(backend, graph);
  t.us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / repeat;
  t.gpu_us = gpu.mean_us();
  ggml_backend_buffer_free(buffer);
  ggml_free(ctx);
  ggml_backend_free(backend);
}

}  // namespace

std::vector<OpTime> time_products(ggml_backend_dev_t device, const LayerShape& s, uint32_t tokens, uint32_t repeat) {
  const uint64_t q = uint64_t(s.heads) * s.head_dim, kv = uint64_t(s.kv_heads) * s.head_dim;
  const struct {
    const char* name;
    uint64_t rows, columns;
  } products[] = {{"q", q, s.hidden},
                  {"k", kv, s.hidden},
                  {"v", kv, s.hidden},
                  {"o", s.hidden, q},
                  {"gate", s.intermediate, s.hidden},
                  {"up", s.intermediate, s.hidden},
                  {"down", s.hidden, s.intermediate}};
  std::vector<OpTime> times;
  for (const ggml_type activations : {GGML_TYPE_F32, GGML_TYPE_F16}) {
    for (const auto& p : products) {
      ggml_tensor *weight = nullptr, *input = nullptr;
      OpTime t{p.name, p.rows, p.columns, tokens, 0, activations == GGML_TYPE_F32 ? "f32" : "f16"};
      time_op(
          device, repeat, t,
          [&](ggml_context* ctx) {
            weight = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, int64_t(p.columns), int64_t(p.rows));
            input = ggml_new_tensor_2d(ctx, activations, int64_t(p.columns), tokens);
            return ggml_mul_mat(ctx, weight, input);
          },
          [&] {
            set(weight, uniform(p.rows * p.columns, 0.03f, 1));
            set(input, uniform(p.columns * tokens, 1.0f, 2));
          });
      t.tflops = 2.0 * double(p.rows) * double(p.columns) * tokens / ((t.gpu_us > 0 ? t.gpu_us : t.us) * 1e6);
      times.push_back(t);
    }
  }
  return times;
}

OpTime time_attention(ggml_backend_dev_t device, const LayerShape& s, uint32_t tokens, uint32_t context,
                      uint32_t repeat) {
  if (tokens > context) throw std::runtime_error("an attention chunk longer than its context");
  const uint64_t d = s.head_dim;
  ggml_tensor *q = nullptr, *k = nullptr, *v = nullptr, *mask = nullptr;
  OpTime t{"attention", 0, 0, tokens, context, "f32"};
  time_op(
      device, repeat, t,
      [&](ggml_context* ctx) {
        // q [d, tokens, heads] F32 as the model's rope leaves it; k and v
        // [d, context, kv heads] F16 as the cache holds them; the mask
        // [context, tokens] F16.
        q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, int64_t(d), tokens, s.heads);
        k = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, int64_t(d), context, s.kv_heads);
        v = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, int64_t(d), context, s.kv_heads);
        mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, context, tokens);
        ggml_tensor* out = ggml_flash_attn_ext(ctx, q, k, v, mask, float(1.0 / std::sqrt(double(d))), 0.0f, 0.0f);
        ggml_prec_set_acc(out, GGML_PREC_F32);
        return out;
      },
      [&] {
        set(q, uniform(d * tokens * s.heads, 1.0f, 3));
        set(k, uniform(d * context * s.kv_heads, 1.0f, 4));
        set(v, uniform(d * context * s.kv_heads, 1.0f, 5));
        // Query t of the chunk is at position context - tokens + t and sees keys up to it.
        std::vector<float> m(size_t(context) * tokens, 0.0f);
        for (uint32_t i = 0; i < tokens; ++i)
          for (uint32_t j = context - tokens + i + 1; j < context; ++j) m[size_t(i) * context + j] = -INFINITY;
        set(mask, m);
      });
  const double keys = double(tokens) * (context - tokens) + double(tokens) * (tokens + 1) / 2;  // attended, all queries
  t.tflops = 4.0 * double(d) * s.heads * keys / ((t.gpu_us > 0 ? t.gpu_us : t.us) * 1e6);
  return t;
}

}  // namespace peer
