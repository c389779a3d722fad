#version 460
// Sparse attention of one query per head over one split of a key list read in
// place (see attention_decode.glsl); attention_merge combines the splits.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "layouts.h"

#define KEY_LIST 1
#include "attention_decode.glsl"
