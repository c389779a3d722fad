#version 460
// Dense attention of one query per head over one split of keys [0, position],
// with keys and values read straight into registers (see attention_decode.glsl).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "layouts.h"

#define KEY_LIST 0
#include "attention_decode.glsl"
