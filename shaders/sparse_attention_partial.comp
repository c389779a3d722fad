#version 460
// Sparse attention over one split of a key list read in place: the selected
// positions (binding 5, no gathered copy of K and V) followed by the chunk's own
// keys under the causal mask. attention_merge combines the splits.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

#define KEY_LIST 1
#define OUTPUTS_IN_SHARED 0
#include "attention_tile.glsl"
