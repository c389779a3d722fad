// Constants shared by the GLSL kernels.
#ifndef KVSCOPE_COMMON_GLSL
#define KVSCOPE_COMMON_GLSL

// Stands in for -infinity (masked scores, empty rows): exp2 of it is 0 and
// LOWEST_FLOAT - LOWEST_FLOAT is 0, where -inf - -inf would be NaN.
const float LOWEST_FLOAT = -3.402823466e38;
#endif
