#version 460
// Sparse attention of one query per head over one split of a key list read in
// place (the selected positions, -1 padded): the decode kernel.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

#define KEY_LIST 1
#include "attention_decode.glsl"
