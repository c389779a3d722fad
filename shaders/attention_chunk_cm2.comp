#version 460
// Dense causal attention of a chunk over one split of the keys, on tensor cores through VK_NV_cooperative_matrix2 (see attention_chunk_cm2.glsl).
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

#define KEY_LIST 0
#include "attention_chunk_cm2.glsl"
