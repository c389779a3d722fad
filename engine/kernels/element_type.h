#pragma once
#include "../shaders/layouts.h"
#include "base/error.h"
#include "io/safetensors.h"

namespace kv {

// The ELEMENT_TYPE specialization constant for a tensor dtype.
inline uint32_t element_type(DType dtype) {
  switch (dtype) {
    case DType::f16: return ELEMENT_F16;
    case DType::bf16: return ELEMENT_BF16;
    case DType::f32: return ELEMENT_F32;
    default: throw InputError(std::string("kernels read F16, BF16 or F32, not ") + dtype_name(dtype));
  }
}

}  // namespace kv
