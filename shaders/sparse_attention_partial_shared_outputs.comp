#version 460
// sparse_attention_partial.comp with the output accumulators in shared memory:
// the form lavapipe compiles quickly (attention_tile.glsl).
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

#define KEY_LIST 1
#define OUTPUTS_IN_SHARED 1
#include "attention_tile.glsl"
