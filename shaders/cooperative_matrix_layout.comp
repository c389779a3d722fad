#version 460
// Which element of a 16x16 cooperative matrix each lane holds, as the driver
// lays them out for an fp16 A operand and an fp32 accumulator: a matrix whose
// element (r, c) is 16 r + c is loaded, used as A against the identity, and
// every lane writes the values of its elements. Kernels that fill operands
// from registers (quoka_key_scores_fragments.comp) run only where this finds
// the layout they were written for.
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require

layout(local_size_x = 32) in;  // one subgroup

// [0, 256): A's element i of lane l at 8 l + i; [256, 512): the accumulator's;
// 512, 513: the elements a lane holds of each.
layout(std430, binding = 0) writeonly buffer Positions { uint positions[]; };

shared float16_t numbered[256];
shared float16_t identity[256];

void main() {
  const uint lane = gl_SubgroupInvocationID;
  for (uint i = gl_LocalInvocationIndex; i < 256u; i += 32u) {
    numbered[i] = float16_t(i);
    identity[i] = float16_t(i / 16u == i % 16u ? 1.0 : 0.0);
  }
  barrier();
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a, b;
  coopMatLoadNV(a, numbered, 0, 16, false);
  coopMatLoadNV(b, identity, 0, 16, false);
  const fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> c =
      coopMatMulAddNV(a, b, fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0));
  for (uint i = 0u; i < min(uint(a.length()), 8u); ++i) positions[8u * lane + i] = uint(a[i]);
  for (uint i = 0u; i < min(uint(c.length()), 8u); ++i) positions[256u + 8u * lane + i] = uint(c[i]);
  if (lane == 0u) {
    positions[512] = uint(a.length());
    positions[513] = uint(c.length());
  }
}
