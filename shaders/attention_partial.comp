#version 460
// Dense causal attention over one split of the keys: every query attends to
// keys [0, its position]. Flash-decoding split; attention_merge combines.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

#define KEY_LIST 0
#define OUTPUTS_IN_SHARED 0
#include "attention_tile.glsl"
