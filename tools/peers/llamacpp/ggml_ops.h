#pragma once
// One layer's MUL_MAT and FLASH_ATTN_EXT through ggml's own graph API on one
// device (ggml_ops.cpp): each operation alone in a graph on a backend of its own, its inputs random,
// computed `repeat` times after 3 untimed computes; timed by the wall clock
// (a submission and a wait each) and, where GGML_VK_PERF_LOGGER was set when
// the Vulkan backend started, by the timestamps ggml records around the node.
#include <cstdint>
#include <string>
#include <vector>

#include "ggml-backend.h"

namespace peer {

struct LayerShape {
  uint32_t layers, hidden, heads, kv_heads, head_dim, intermediate;
};

struct OpTime {
  std::string name;                            // q, k, v, o, gate, up, down; attention
  uint64_t rows = 0, columns = 0, tokens = 0;  // a product's [rows x columns] by [columns x tokens]
  uint64_t context = 0;                        // attention: the keys of the context the chunk ends
  std::string activations;                     // f32 (as llama.cpp's forward pass feeds its products) or f16
  double us = 0;                               // wall clock a compute
  double gpu_us = 0;                           // the perf logger's GPU time a compute; 0 without it
  // From gpu_us where there is one; attention's over the keys each query attends (causal).
  double tflops = 0;
};

// The seven products of a layer at `tokens` tokens, with F32 and with F16 activations.
std::vector<OpTime> time_products(ggml_backend_dev_t device, const LayerShape& shape, uint32_t tokens, uint32_t repeat);

// A chunk of `tokens` queries that ends a context of `context` keys (causal
// mask, F16 K and V, F32 accumulation as llama.cpp asks for it).
OpTime time_attention(ggml_backend_dev_t device, const LayerShape& shape, uint32_t tokens, uint32_t context,
                      uint32_t repeat);

}  // namespace peer
