#version 460
// model_matmul.comp's linear layer on tensor cores (VK_NV_cooperative_matrix,
// 16x16x16, fp16 operands, fp32 accumulators; the build also writes its KHR
// version): y[t, r] (+)= sum_k W[r, k] x[t, k] (+ bias[r]). The engine runs it
// for prefill chunks where the device has cooperative matrices, the weights
// are 16-bit and n_in (and an input head's d) is a multiple of 8.
//
// The inputs enter the products as fp16, as a 16-bit model's activations do
// in PyTorch: each rounded once (a relative 2^-12), summed in fp32 (the
// tolerance docs/model.md states). bf16 weights are widened and rounded to
// fp16 on their way to shared memory: exact for every bf16 value in fp16's
// normal range, which holds trained weights.
//
// A subgroup owns 64 tokens x 64 rows: four input fragments, four weight
// fragments and sixteen accumulators, so each fragment loaded from shared
// memory feeds four products. A workgroup is TOKEN_SUBGROUPS x ROW_SUBGROUPS
// of them (the invocations / 32 subgroups) and walks the input channels STEP
// at a time: a step's global loads are issued before the products of the
// step before and wait in registers until those are done, then go to shared
// memory, one stage (two barriers a step) or two alternating (one)
// (docs/perf-experiments.md: the shapes measured). Workgroups along x share
// a weight tile (x walks the tokens), so a weight tile is read from memory
// about once. Where the tiles are too few to fill the device (a 128-token
// chunk), k_splits > 1 slices the input channels (workgroup z) and each slice
// writes its partial sums for model_matmul_splits.comp to add up with the
// bias and the residual.
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint ELEMENT_TYPE = ELEMENT_F16;  // the weights': fp16 or bf16
// The inputs': fp32, or fp16 where the kernel before wrote them so (RMSNorm,
// SwiGLU), which halves the bytes a tile reads: at the 128 x 128 tile the
// kernel is bound by what it reads from L2.
layout(constant_id = 1) const uint INPUT_TYPE = ELEMENT_F32;
layout(local_size_x_id = 2) in;  // subgroups of 32
layout(constant_id = 3) const uint TOKEN_SUBGROUPS = 2;  // the workgroup's subgroups along the tokens
layout(constant_id = 4) const uint STEP = 32;            // channels a step: 32 or 64
layout(constant_id = 5) const uint STAGES = 1;           // shared-memory stages: 1 or 2

#include "common.glsl"

layout(std430, binding = 0) readonly buffer Weights { uvec4 weights[]; };  // [n_out, n_in], 8 a piece
layout(std430, binding = 1) readonly buffer Input { vec4 x[]; };           // [n_tokens, n_in], or head-major
layout(std430, binding = 1) readonly buffer InputHalf { uvec4 x_half[]; };  // the same in fp16
layout(std430, binding = 2) buffer Output { float y[]; };                  // [n_tokens, n_out]
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };        // [n_out], read when has_bias
layout(std430, binding = 4) writeonly buffer Partials { float partials[]; };  // [k_splits, n_tokens, n_out]

layout(push_constant) uniform ModelMatmulPush { MODEL_MATMUL_FIELDS } pc;

const uint INVOCATIONS = gl_WorkGroupSize.x, SUBGROUPS = INVOCATIONS / 32u, FRAGMENT = 16u;
const uint TOKENS = 64u * TOKEN_SUBGROUPS, ROWS = 64u * (SUBGROUPS / TOKEN_SUBGROUPS);
const uint PIECES = STEP / 8u;        // 16-byte pieces of a row's step
const uint ROW_PIECES = PIECES + 1u;  // padded rows: no bank conflicts between rows
const uint INPUT_PIECES = TOKENS * PIECES / INVOCATIONS;  // per invocation and step
const uint WEIGHT_PIECES = ROWS * PIECES / INVOCATIONS;

#define HALF_FRAGMENT fcoopmatNV<16, gl_ScopeSubgroup, FRAGMENT, FRAGMENT>
#define FLOAT_FRAGMENT fcoopmatNV<32, gl_ScopeSubgroup, FRAGMENT, FRAGMENT>

const uint STAGE_PIECES = (TOKENS + ROWS) * ROW_PIECES;
shared uvec4 tiles[STAGES * STAGE_PIECES];  // a stage: the step's inputs, then its weights
shared float output_tile[SUBGROUPS * FRAGMENT * FRAGMENT];  // one fragment a subgroup, for the epilogue

// Eight weights of a piece as fp16.
uvec4 as_fp16(uvec4 w) {
  if (ELEMENT_TYPE == ELEMENT_F16) return w;
  const vec4 lo = uintBitsToFloat(uvec4(w.x << 16, w.x & 0xffff0000u, w.y << 16, w.y & 0xffff0000u));
  const vec4 hi = uintBitsToFloat(uvec4(w.z << 16, w.z & 0xffff0000u, w.w << 16, w.w & 0xffff0000u));
  return pack8(lo, hi);
}

// Invocation i's share of a step from channel k0: channels k0 + c .. + 7
// (c = (i % PIECES) * 8) of its input pieces (tokens) and weight pieces
// (rows) i / PIECES + 32 j, raw: fp32 inputs (two words a piece) become fp16
// only when staged, so that their loads are not waited for until then. Rows and tokens past the
// layer's are clamped to its last (loaded again, their outputs never
// stored), so only the channels need a check, one an invocation. The input
// rows start at input_starts[j] (t * n_in, or t * d head-major), the weight
// rows at weight_starts[j].
// An invocation's own (private) rows and step in flight: the functions share
// them, since arrays sized by specialization constants are not parameters.
uint input_starts[INPUT_PIECES], weight_starts[WEIGHT_PIECES];
uvec4 a[2u * INPUT_PIECES];  // fp16 inputs use every other piece
uvec4 w[WEIGHT_PIECES];

void fetch_step(uint k0, uint k_end) {
  const uint k = k0 + (gl_LocalInvocationIndex % PIECES) * 8u, d = pc.input_head_dim;
  const bool inside = k < k_end;
  // Head-major input: channel k of token t at ((k / d) * n_tokens + t) * d + k % d,
  // the eight in one head since d and k are multiples of 8.
  const uint input_offset = d == 0u ? k : (k / d) * pc.n_tokens * d + k % d;
  [[unroll]] for (uint j = 0u; j < INPUT_PIECES; ++j) {
    const uint at = input_starts[j] + input_offset;
    if (INPUT_TYPE == ELEMENT_F16) {
      a[2u * j] = inside ? x_half[at / 8u] : uvec4(0);
    } else {
      a[2u * j] = inside ? floatBitsToUint(x[at / 4u]) : uvec4(0);
      a[2u * j + 1u] = inside ? floatBitsToUint(x[at / 4u + 1u]) : uvec4(0);
    }
  }
  [[unroll]] for (uint j = 0u; j < WEIGHT_PIECES; ++j) w[j] = inside ? weights[(weight_starts[j] + k) / 8u] : uvec4(0);
}

void stage_step(uint base) {
  const uint i = gl_LocalInvocationIndex;
  [[unroll]] for (uint j = 0u; j < INPUT_PIECES; ++j) {
    const uint p = i + INVOCATIONS * j;
    tiles[base + (p / PIECES) * ROW_PIECES + p % PIECES] =
        INPUT_TYPE == ELEMENT_F16 ? a[2u * j] : pack8(uintBitsToFloat(a[2u * j]), uintBitsToFloat(a[2u * j + 1u]));
  }
  [[unroll]] for (uint j = 0u; j < WEIGHT_PIECES; ++j) {
    const uint p = i + INVOCATIONS * j;
    tiles[base + (TOKENS + p / PIECES) * ROW_PIECES + p % PIECES] = as_fp16(w[j]);
  }
}

// The epilogue of the accumulator STORE_FRAGMENT put in this subgroup's slot
// of shared memory: tokens t0 .. +15, rows r0 .. +15, with the bias and the
// residual, or a slice's partial sums. (A macro, not a function taking the
// matrix: spirv_coopmat_khr rewrites matrices held in variables, not
// parameters.)
void finish_fragment(uint slot, uint t0, uint r0) {
  subgroupMemoryBarrierShared();
  subgroupBarrier();
  for (uint e = gl_SubgroupInvocationID; e < FRAGMENT * FRAGMENT; e += gl_SubgroupSize) {
    const uint t = t0 + e / FRAGMENT, r = r0 + e % FRAGMENT;
    if (t >= pc.n_tokens || r >= pc.n_out) continue;
    float sum = output_tile[slot + e];
    const uint at = t * pc.n_out + r;
    if (pc.k_splits > 1u) {
      partials[gl_WorkGroupID.z * pc.n_tokens * pc.n_out + at] = sum;
      continue;
    }
    if (pc.has_bias != 0u) sum += bias[r];
    if (pc.accumulate != 0u) sum += y[at];
    y[at] = sum;
  }
  subgroupMemoryBarrierShared();
  subgroupBarrier();
}
#define STORE_FRAGMENT(ACC, T0, R0)                                                       \
  coopMatStoreNV(ACC, output_tile, gl_SubgroupID * FRAGMENT * FRAGMENT, FRAGMENT, false); \
  finish_fragment(gl_SubgroupID * FRAGMENT * FRAGMENT, T0, R0)

void main() {
  const uint subgroup = gl_SubgroupID;
  const uint token0 = gl_WorkGroupID.x * TOKENS, row0 = gl_WorkGroupID.y * ROWS;
  const uint k_begin = gl_WorkGroupID.z * pc.split_channels, k_end = min(pc.n_in, k_begin + pc.split_channels);
  const uint token_base = (subgroup % TOKEN_SUBGROUPS) * 64u, row_base = TOKENS + (subgroup / TOKEN_SUBGROUPS) * 64u;
  FLOAT_FRAGMENT acc00 = FLOAT_FRAGMENT(0.0), acc01 = FLOAT_FRAGMENT(0.0), acc02 = FLOAT_FRAGMENT(0.0), acc03 = FLOAT_FRAGMENT(0.0), acc10 = FLOAT_FRAGMENT(0.0), acc11 = FLOAT_FRAGMENT(0.0), acc12 = FLOAT_FRAGMENT(0.0), acc13 = FLOAT_FRAGMENT(0.0), acc20 = FLOAT_FRAGMENT(0.0), acc21 = FLOAT_FRAGMENT(0.0), acc22 = FLOAT_FRAGMENT(0.0), acc23 = FLOAT_FRAGMENT(0.0), acc30 = FLOAT_FRAGMENT(0.0), acc31 = FLOAT_FRAGMENT(0.0), acc32 = FLOAT_FRAGMENT(0.0), acc33 = FLOAT_FRAGMENT(0.0);
  const uint i = gl_LocalInvocationIndex, row_stride = pc.input_head_dim == 0u ? pc.n_in : pc.input_head_dim;
  [[unroll]] for (uint j = 0u; j < INPUT_PIECES; ++j)
    input_starts[j] = min(token0 + i / PIECES + (INVOCATIONS / PIECES) * j, pc.n_tokens - 1u) * row_stride;
  [[unroll]] for (uint j = 0u; j < WEIGHT_PIECES; ++j)
    weight_starts[j] = min(row0 + i / PIECES + (INVOCATIONS / PIECES) * j, pc.n_out - 1u) * pc.n_in;
  fetch_step(k_begin, k_end);
  uint base = 0u;  // the stage the products read
  if (STAGES == 2u) {
    stage_step(0u);
    barrier();
  }
  for (uint k0 = k_begin; k0 < k_end; k0 += STEP) {
    if (STAGES == 1u) {
      barrier();  // every subgroup is done with the last step's tiles
      stage_step(0u);
      barrier();
    }
    const bool more = k0 + STEP < k_end;
    if (more) fetch_step(k0 + STEP, k_end);
    [[unroll]] for (uint kb = 0u; kb < STEP / FRAGMENT; ++kb) {
      HALF_FRAGMENT in0, in1, in2, in3, w0, w1, w2, w3;
      const uint inputs_at = base + token_base * ROW_PIECES + kb * 2u, weights_at = base + row_base * ROW_PIECES + kb * 2u;
      coopMatLoadNV(in0, tiles, inputs_at, ROW_PIECES, false);
      coopMatLoadNV(in1, tiles, inputs_at + 16u * ROW_PIECES, ROW_PIECES, false);
      coopMatLoadNV(in2, tiles, inputs_at + 32u * ROW_PIECES, ROW_PIECES, false);
      coopMatLoadNV(in3, tiles, inputs_at + 48u * ROW_PIECES, ROW_PIECES, false);
      // W^T: column n of the B operand is weight row n.
      coopMatLoadNV(w0, tiles, weights_at, ROW_PIECES, true);
      coopMatLoadNV(w1, tiles, weights_at + 16u * ROW_PIECES, ROW_PIECES, true);
      coopMatLoadNV(w2, tiles, weights_at + 32u * ROW_PIECES, ROW_PIECES, true);
      coopMatLoadNV(w3, tiles, weights_at + 48u * ROW_PIECES, ROW_PIECES, true);
      acc00 = coopMatMulAddNV(in0, w0, acc00);
      acc01 = coopMatMulAddNV(in0, w1, acc01);
      acc02 = coopMatMulAddNV(in0, w2, acc02);
      acc03 = coopMatMulAddNV(in0, w3, acc03);
      acc10 = coopMatMulAddNV(in1, w0, acc10);
      acc11 = coopMatMulAddNV(in1, w1, acc11);
      acc12 = coopMatMulAddNV(in1, w2, acc12);
      acc13 = coopMatMulAddNV(in1, w3, acc13);
      acc20 = coopMatMulAddNV(in2, w0, acc20);
      acc21 = coopMatMulAddNV(in2, w1, acc21);
      acc22 = coopMatMulAddNV(in2, w2, acc22);
      acc23 = coopMatMulAddNV(in2, w3, acc23);
      acc30 = coopMatMulAddNV(in3, w0, acc30);
      acc31 = coopMatMulAddNV(in3, w1, acc31);
      acc32 = coopMatMulAddNV(in3, w2, acc32);
      acc33 = coopMatMulAddNV(in3, w3, acc33);
    }
    if (STAGES == 2u) {
      // The other stage was last read before the previous barrier.
      if (more) stage_step(STAGE_PIECES - base);
      barrier();
      base = STAGE_PIECES - base;
    }
  }
  const uint t0 = token0 + token_base, r0 = row0 + row_base - TOKENS;
  STORE_FRAGMENT(acc00, t0 + 0u, r0 + 0u);
  STORE_FRAGMENT(acc01, t0 + 0u, r0 + 16u);
  STORE_FRAGMENT(acc02, t0 + 0u, r0 + 32u);
  STORE_FRAGMENT(acc03, t0 + 0u, r0 + 48u);
  STORE_FRAGMENT(acc10, t0 + 16u, r0 + 0u);
  STORE_FRAGMENT(acc11, t0 + 16u, r0 + 16u);
  STORE_FRAGMENT(acc12, t0 + 16u, r0 + 32u);
  STORE_FRAGMENT(acc13, t0 + 16u, r0 + 48u);
  STORE_FRAGMENT(acc20, t0 + 32u, r0 + 0u);
  STORE_FRAGMENT(acc21, t0 + 32u, r0 + 16u);
  STORE_FRAGMENT(acc22, t0 + 32u, r0 + 32u);
  STORE_FRAGMENT(acc23, t0 + 32u, r0 + 48u);
  STORE_FRAGMENT(acc30, t0 + 48u, r0 + 0u);
  STORE_FRAGMENT(acc31, t0 + 48u, r0 + 16u);
  STORE_FRAGMENT(acc32, t0 + 48u, r0 + 32u);
  STORE_FRAGMENT(acc33, t0 + 48u, r0 + 48u);
}
