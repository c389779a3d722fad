#version 460
// model_matvec.glsl where a matrix may be ggml blocks (its type a
// specialization constant): dequantized as they stream.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "layouts.h"

#define MATVEC_READS_BLOCKS 1
#include "model_matvec.glsl"
