#version 460
// model_matmul.comp's linear layer on tensor cores (VK_NV_cooperative_matrix,
// 16x16x16, fp16 weights, fp32 accumulators; the build also writes its KHR
// version): y[t, r] (+)= sum_k W[r, k] x[t, k] (+ bias[r]). The engine runs it
// for prefill chunks where the device has cooperative matrices, the weights
// are fp16 and n_in (and an input head's d) is a multiple of 8.
//
// A workgroup takes 32 tokens by 64 rows, 32 input channels at a time: the
// tile's inputs, converted from fp32, and its weights, raw, go to shared
// memory, and the next step's loads are issued before this step's products.
// Each fp32 input enters the products as hi + lo (hi = fp16_high_part(x),
// lo = fp16(x - hi)), two products into one fp32 accumulator, so that an input
// keeps about 22 bits instead of fp16's 11: the outputs stay as close to the
// float64 forward pass as model_matmul's fp32 sums. Subgroup s owns tokens
// 16 (s % 2) .. +15 and rows 32 (s / 2) .. +31, two accumulators.
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(local_size_x = 128) in;  // 4 subgroups of 32

#include "common.glsl"

layout(std430, binding = 0) readonly buffer Weights { uvec4 weights[]; };  // [n_out, n_in] fp16, 8 a piece
layout(std430, binding = 1) readonly buffer Input { float x[]; };          // [n_tokens, n_in], or head-major
layout(std430, binding = 2) buffer Output { float y[]; };                  // [n_tokens, n_out]
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };        // [n_out], read when has_bias

layout(push_constant) uniform ModelMatmulPush { MODEL_MATMUL_FIELDS } pc;

const uint TOKENS = 32u, ROWS = 64u, STEP = 32u, FRAGMENT = 16u;
const uint PIECES = STEP / 8u;        // 16-byte pieces of a row's step
const uint ROW_PIECES = PIECES + 1u;  // padded rows: no bank conflicts between rows
const uint OUT_STRIDE = ROWS + 4u;    // floats of an output row in shared memory
const uint WEIGHT_PIECES = ROWS * PIECES / 128u;  // per invocation and step

#define HALF_FRAGMENT fcoopmatNV<16, gl_ScopeSubgroup, FRAGMENT, FRAGMENT>
#define FLOAT_FRAGMENT fcoopmatNV<32, gl_ScopeSubgroup, FRAGMENT, FRAGMENT>

shared uvec4 input_hi[TOKENS * ROW_PIECES];
shared uvec4 input_lo[TOKENS * ROW_PIECES];
shared uvec4 weight_tile[ROWS * ROW_PIECES];
shared float output_tile[TOKENS * OUT_STRIDE];

// Input channels k .. k + 7 of token t (zeros past the input): k is a multiple
// of 8, and so is d, so the eight lie in one head.
void fetch_input(uint t, uint k, out vec4 a, out vec4 b) {
  a = vec4(0.0);
  b = vec4(0.0);
  if (t >= pc.n_tokens || k >= pc.n_in) return;
  const uint d = pc.input_head_dim;
  const uint at = d == 0u ? t * pc.n_in + k : ((k / d) * pc.n_tokens + t) * d + k % d;
  a = vec4(x[at], x[at + 1u], x[at + 2u], x[at + 3u]);
  b = vec4(x[at + 4u], x[at + 5u], x[at + 6u], x[at + 7u]);
}

// Invocation i's share of a step from channel k0: the input piece of token
// i / PIECES, and weight pieces i + 128 j.
void fetch_step(uint token0, uint row0, uint k0, out vec4 a, out vec4 b, out uvec4 w[WEIGHT_PIECES]) {
  const uint i = gl_LocalInvocationIndex;
  fetch_input(token0 + i / PIECES, k0 + (i % PIECES) * 8u, a, b);
  [[unroll]] for (uint j = 0u; j < WEIGHT_PIECES; ++j) {
    const uint p = i + 128u * j, r = row0 + p / PIECES, k = k0 + (p % PIECES) * 8u;
    w[j] = r < pc.n_out && k < pc.n_in ? weights[(r * pc.n_in + k) / 8u] : uvec4(0);
  }
}

void main() {
  const uint tid = gl_LocalInvocationIndex, subgroup = gl_SubgroupID;
  const uint row0 = gl_WorkGroupID.x * ROWS, token0 = gl_WorkGroupID.y * TOKENS;
  const uint token_block = subgroup % 2u, row_half = subgroup / 2u;
  FLOAT_FRAGMENT acc0 = FLOAT_FRAGMENT(0.0), acc1 = FLOAT_FRAGMENT(0.0);
  vec4 a, b;
  uvec4 w[WEIGHT_PIECES];
  fetch_step(token0, row0, 0u, a, b, w);
  for (uint k0 = 0u; k0 < pc.n_in; k0 += STEP) {
    const vec4 hi_a = fp16_high_part(a), hi_b = fp16_high_part(b);
    input_hi[(tid / PIECES) * ROW_PIECES + tid % PIECES] = pack8(hi_a, hi_b);
    input_lo[(tid / PIECES) * ROW_PIECES + tid % PIECES] = pack8(a - hi_a, b - hi_b);
    [[unroll]] for (uint j = 0u; j < WEIGHT_PIECES; ++j) {
      const uint p = tid + 128u * j;
      weight_tile[(p / PIECES) * ROW_PIECES + p % PIECES] = w[j];
    }
    barrier();
    if (k0 + STEP < pc.n_in) fetch_step(token0, row0, k0 + STEP, a, b, w);
    [[unroll]] for (uint kb = 0u; kb < STEP / FRAGMENT; ++kb) {
      HALF_FRAGMENT in_hi, in_lo, w0, w1;
      coopMatLoadNV(in_hi, input_hi, token_block * FRAGMENT * ROW_PIECES + kb * 2u, ROW_PIECES, false);
      coopMatLoadNV(in_lo, input_lo, token_block * FRAGMENT * ROW_PIECES + kb * 2u, ROW_PIECES, false);
      // W^T: column n of the B operand is weight row n.
      coopMatLoadNV(w0, weight_tile, (row_half * 32u) * ROW_PIECES + kb * 2u, ROW_PIECES, true);
      coopMatLoadNV(w1, weight_tile, (row_half * 32u + FRAGMENT) * ROW_PIECES + kb * 2u, ROW_PIECES, true);
      acc0 = coopMatMulAddNV(in_hi, w0, acc0);
      acc1 = coopMatMulAddNV(in_hi, w1, acc1);
      acc0 = coopMatMulAddNV(in_lo, w0, acc0);
      acc1 = coopMatMulAddNV(in_lo, w1, acc1);
    }
    barrier();  // every subgroup is done with this step's tiles
  }
  coopMatStoreNV(acc0, output_tile, token_block * FRAGMENT * OUT_STRIDE + row_half * 32u, OUT_STRIDE, false);
  coopMatStoreNV(acc1, output_tile, token_block * FRAGMENT * OUT_STRIDE + row_half * 32u + FRAGMENT, OUT_STRIDE, false);
  barrier();
  for (uint e = tid; e < TOKENS * ROWS; e += 128u) {
    const uint t = token0 + e / ROWS, r = row0 + e % ROWS;
    if (t >= pc.n_tokens || r >= pc.n_out) continue;
    float sum = output_tile[(e / ROWS) * OUT_STRIDE + e % ROWS];
    const uint at = t * pc.n_out + r;
    if (pc.has_bias != 0u) sum += bias[r];
    if (pc.accumulate != 0u) sum += y[at];
    y[at] = sum;
  }
}
