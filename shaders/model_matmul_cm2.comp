#version 460
// model_matmul.comp's linear layer on tensor cores through
// VK_NV_cooperative_matrix2: y[t, r] (+)= sum_k W[r, k] x[t, k] (+ bias[r]).
// It serves prefill chunks of 16-bit weights where Device::cooperative_matrix2()
// (engine/model/kernels.cpp).
//
// The matrices are of workgroup scope and their loads tensor-addressed, so
// the driver stages the tiles (on the H100 through its asynchronous copies)
// and lays out the fragments: the kernel says what, not how. A workgroup
// owns TOKENS x ROWS outputs and walks the input channels STEP at a time;
// clamped tensor layouts read zeros past the layer's tokens, rows and
// channels and drop stores past them, so any shape runs.
//
// Inputs enter the products as fp16, as a 16-bit model's activations do in
// PyTorch: fp32 inputs (attention's output, the LM head's) and bf16 weights
// are converted as they are loaded (decode functions); fp32 accumulation.
// bf16 weights rounded to fp16 are exact in fp16's normal range, which holds
// trained weights. With k_splits > 1 (too few tiles to fill the device)
// workgroup z takes a slice of the channels and writes its partial sums for
// model_matmul_splits.comp.
//
// On the H100 (driver 580) it ran at a third of model_matmul_matrix's KHR
// version, so the engine takes it only on request (KVSCOPE_COOPERATIVE_MATRIX2=1;
// engine/kernels/kernel_choice.h, docs/perf.md).
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint ELEMENT_TYPE = ELEMENT_F16;  // the weights': fp16 or bf16
layout(constant_id = 1) const uint INPUT_TYPE = ELEMENT_F32;    // the inputs': fp32 or fp16
layout(local_size_x_id = 2) in;                                  // a size the driver lists for these matrices
layout(constant_id = 3) const uint TOKENS = 128;
layout(constant_id = 4) const uint ROWS = 128;
layout(constant_id = 5) const uint STEP = 32;
layout(constant_id = 6) const uint UNROLL = 4;  // steps a round of the inner tiles' loop

layout(std430, binding = 0) readonly buffer Weights { float16_t weights[]; };       // [n_out, n_in]
layout(std430, binding = 0) readonly buffer WeightsBf16 { uint16_t weights_bf16[]; };
layout(std430, binding = 1) readonly buffer Input { float x[]; };                  // [n_tokens, n_in], or head-major
layout(std430, binding = 1) readonly buffer InputHalf { float16_t x_half[]; };
layout(std430, binding = 2) buffer Output { float y[]; };                          // [n_tokens, n_out]
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };                // [n_out], read when has_bias
layout(std430, binding = 4) writeonly buffer Partials { float partials[]; };       // [k_splits, n_tokens, n_out]

layout(push_constant) uniform ModelMatmulPush { MODEL_MATMUL_FIELDS } pc;

layout(buffer_reference, std430, buffer_reference_align = 2) buffer Bf16Element { uint16_t bits; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Fp32Element { float value; };

float16_t bf16_as_fp16(const in Bf16Element element, const in uint block[2], const in uint in_block[2]) {
  return float16_t(uintBitsToFloat(uint(element.bits) << 16));
}
float16_t fp32_as_fp16(const in Fp32Element element, const in uint block[2], const in uint in_block[2]) {
  return float16_t(element.value);
}
float add_bias(const in uint row, const in uint column, const in float value, const in uint first_row) {
  return value + bias[min(first_row + column, pc.n_out - 1u)];
}

#define CLAMPED gl_CooperativeMatrixClampModeConstantNV
#define ACCUMULATOR coopmat<float, gl_ScopeWorkgroup, TOKENS, ROWS, gl_MatrixUseAccumulator>

void main() {
  const uint token0 = gl_WorkGroupID.x * TOKENS, row0 = gl_WorkGroupID.y * ROWS;
  const uint k_begin = gl_WorkGroupID.z * pc.split_channels, k_end = min(pc.n_in, k_begin + pc.split_channels);
  const uint d = pc.input_head_dim;

  // Inputs: token-major rows of n_in, or (head-major, as attention leaves
  // them) a head's [n_tokens, d] block, STEP dividing d so a step stays in one head.
  tensorLayoutNV<2, CLAMPED> inputs = createTensorLayoutNV(2, CLAMPED);
  inputs = d == 0u ? setTensorLayoutDimensionNV(inputs, pc.n_tokens, k_end) : setTensorLayoutDimensionNV(inputs, pc.n_tokens, d);
  inputs = setTensorLayoutStrideNV(inputs, d == 0u ? pc.n_in : d, 1);
  tensorLayoutNV<2, CLAMPED> weight_rows = createTensorLayoutNV(2, CLAMPED);
  weight_rows = setTensorLayoutDimensionNV(weight_rows, pc.n_out, k_end);
  weight_rows = setTensorLayoutStrideNV(weight_rows, pc.n_in, 1);
  tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);  // W^T: B's column n is row n of W
  tensorLayoutNV<2, CLAMPED> outputs = createTensorLayoutNV(2, CLAMPED);
  outputs = setTensorLayoutDimensionNV(outputs, pc.n_tokens, pc.n_out);

  ACCUMULATOR acc = ACCUMULATOR(0.0);
  if (pc.accumulate != 0u && pc.k_splits == 1u)  // the residual: the sums start from it
    coopMatLoadTensorNV(acc, y, 0, sliceTensorLayoutNV(outputs, token0, TOKENS, row0, ROWS));

  // One step of STEP channels from k0: its inputs and weights loaded through
  // the layouts given, then multiplied into acc.
#define STEP_PRODUCT(INPUTS, WEIGHTS, K0)                                                                           \
  {                                                                                                                 \
    coopmat<float16_t, gl_ScopeWorkgroup, TOKENS, STEP, gl_MatrixUseA> a;                                           \
    coopmat<float16_t, gl_ScopeWorkgroup, STEP, ROWS, gl_MatrixUseB> b;                                             \
    const uint input_offset = d == 0u ? 0u : ((K0) / d) * pc.n_tokens * d;                                          \
    const uint input_k = d == 0u ? (K0) : (K0) % d;                                                                 \
    if (INPUT_TYPE == ELEMENT_F16)                                                                                  \
      coopMatLoadTensorNV(a, x_half, input_offset, sliceTensorLayoutNV(INPUTS, token0, TOKENS, input_k, STEP));      \
    else                                                                                                            \
      coopMatLoadTensorNV(a, x, input_offset, sliceTensorLayoutNV(INPUTS, token0, TOKENS, input_k, STEP), fp32_as_fp16); \
    if (ELEMENT_TYPE == ELEMENT_BF16)                                                                               \
      coopMatLoadTensorNV(b, weights_bf16, 0, sliceTensorLayoutNV(WEIGHTS, row0, ROWS, K0, STEP), transposed, bf16_as_fp16); \
    else                                                                                                            \
      coopMatLoadTensorNV(b, weights, 0, sliceTensorLayoutNV(WEIGHTS, row0, ROWS, K0, STEP), transposed);           \
    acc = coopMatMulAdd(a, b, acc);                                                                                 \
  }

  // A tile inside the layer on every side takes unclamped layouts (no bounds
  // checks, 16-byte aligned rows), UNROLL steps a round so that the driver
  // can issue a round's loads ahead of its products; the edges go step by step.
  const bool inside = token0 + TOKENS <= pc.n_tokens && row0 + ROWS <= pc.n_out && (k_end - k_begin) % (UNROLL * STEP) == 0 &&
                      pc.n_in % 8u == 0u;
  if (inside) {
    tensorLayoutNV<2> fast_inputs = createTensorLayoutNV(2);
    fast_inputs = setTensorLayoutDimensionNV(fast_inputs, pc.n_tokens, d == 0u ? k_end : d);
    fast_inputs = setTensorLayoutStrideNV(fast_inputs, (d == 0u ? pc.n_in : d) & ~7u, 1);
    tensorLayoutNV<2> fast_weights = createTensorLayoutNV(2);
    fast_weights = setTensorLayoutDimensionNV(fast_weights, pc.n_out, k_end);
    fast_weights = setTensorLayoutStrideNV(fast_weights, pc.n_in & ~7u, 1);
    for (uint k_round = k_begin; k_round < k_end; k_round += UNROLL * STEP)
      [[unroll]] for (uint u = 0u; u < UNROLL; ++u) STEP_PRODUCT(fast_inputs, fast_weights, k_round + u * STEP)
  } else {
    for (uint k0 = k_begin; k0 < k_end; k0 += STEP) STEP_PRODUCT(inputs, weight_rows, k0)
  }

  if (pc.k_splits > 1u) {
    coopMatStoreTensorNV(acc, partials, gl_WorkGroupID.z * pc.n_tokens * pc.n_out,
                         sliceTensorLayoutNV(outputs, token0, TOKENS, row0, ROWS));
    return;
  }
  if (pc.has_bias != 0u) coopMatPerElementNV(acc, acc, add_bias, row0);
  coopMatStoreTensorNV(acc, y, 0, sliceTensorLayoutNV(outputs, token0, TOKENS, row0, ROWS));
}
