#version 460
// model_matvec.glsl over matrices in the storage type: the kernel a CPU's
// products run (lavapipe builds it in a third of the blocks' form's time).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "layouts.h"

#define MATVEC_READS_BLOCKS 0
#include "model_matvec.glsl"
