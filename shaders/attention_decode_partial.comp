#version 460
// Dense attention of one query per head over one split of the keys [0, position]:
// the decode kernel (flash-decoding split; attention_merge combines).
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

#define KEY_LIST 0
#include "attention_decode.glsl"
