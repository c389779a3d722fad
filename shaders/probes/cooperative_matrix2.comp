#version 460
// What the build asks of a glslang before it writes the VK_NV_cooperative_matrix2
// kernels (tools/build_glslang.sh, shaders/CMakeLists.txt): workgroup-scope
// matrices, tensor-addressed loads and stores, a decode function and a
// row reduction. Debian 12's glslang (12.0) refuses it.
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_EXT_buffer_reference : require
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer Inputs { float16_t inputs[]; };
layout(std430, binding = 1) buffer Outputs { float outputs[]; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer Bits { uint16_t bits; };

float16_t decode(const in Bits block, const in uint block_coords[2], const in uint coord_in_block[2]) {
  return float16_t(uintBitsToFloat(uint(block.bits) << 16));
}
float largest(const in float a, const in float b) { return max(a, b); }

void main() {
  tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> layout_ = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
  layout_ = setTensorLayoutDimensionNV(layout_, 64, 64);
  tensorViewNV<2, false, 1, 0> transpose = createTensorViewNV(2, false, 1, 0);
  coopmat<float16_t, gl_ScopeWorkgroup, 64, 32, gl_MatrixUseA> a;
  coopmat<float16_t, gl_ScopeWorkgroup, 32, 64, gl_MatrixUseB> b;
  coopMatLoadTensorNV(a, inputs, 0, sliceTensorLayoutNV(layout_, 0, 64, 0, 32));
  coopMatLoadTensorNV(b, inputs, 0, sliceTensorLayoutNV(layout_, 0, 64, 0, 32), transpose, decode);
  coopmat<float, gl_ScopeWorkgroup, 64, 64, gl_MatrixUseAccumulator> c =
      coopMatMulAdd(a, b, coopmat<float, gl_ScopeWorkgroup, 64, 64, gl_MatrixUseAccumulator>(0.0));
  coopMatReduceNV(c, c, gl_CooperativeMatrixReduceRowNV, largest);
  coopMatStoreTensorNV(c, outputs, 0, sliceTensorLayoutNV(layout_, 0, 64, 0, 64));
}
