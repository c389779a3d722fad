#include "kernels/kernel_choice.h"

#include <cstdlib>

namespace kv {

bool cooperative_matrix2_built() { return KVSCOPE_COOPERATIVE_MATRIX2 != 0; }

bool cooperative_matrix2_chosen() {
  const char* chosen = std::getenv("KVSCOPE_COOPERATIVE_MATRIX2");
  return chosen && std::string(chosen) == "1";
}

MatrixKernels matrix_kernels(const vk::DeviceInfo& info, bool validation) {
  if (!info.cooperative_matrix) return MatrixKernels::none;
  if (validation || !info.cooperative_matrix_khr) return MatrixKernels::cooperative_matrix;
  if (info.cooperative_matrix2 && cooperative_matrix2_built() && cooperative_matrix2_chosen())
    return MatrixKernels::cooperative_matrix2;
  return MatrixKernels::cooperative_matrix_khr;
}

DeviceClass device_class(const vk::DeviceInfo& info) { return info.type == "cpu" ? DeviceClass::cpu : DeviceClass::gpu; }

// A created device took the KHR (and cm2) extensions unless a validation
// layer was asked for: its choice is the info's with that validation.
MatrixKernels matrix_kernels(const vk::Device& device) {
  return matrix_kernels(device.info(), !device.khr_cooperative_matrix());
}

std::string describe_matrix_kernels(const vk::DeviceInfo& info, bool validation) {
  std::string why;
  if (info.cooperative_matrix2 && !cooperative_matrix2_built())
    why = "; VK_NV_cooperative_matrix2 kernels not built (no glslang writes them: tools/build_glslang.sh)";
  else if (info.cooperative_matrix2 && validation)
    why = "; VK_NV_cooperative_matrix2 off under the validation layer, which predates it";
  else if (info.cooperative_matrix2 && !cooperative_matrix2_chosen())
    why = "; VK_NV_cooperative_matrix2 kernels on request (KVSCOPE_COOPERATIVE_MATRIX2=1): slower on the H100, docs/perf.md";
  else if (info.cooperative_matrix_khr && validation)
    why = "; VK_KHR_cooperative_matrix off under the validation layer, which predates it";
  switch (matrix_kernels(info, validation)) {
    case MatrixKernels::none:
      return "scalar (no VK_NV_cooperative_matrix with 16x16x16 fp16 on 32-wide subgroups)";
    case MatrixKernels::cooperative_matrix:
      return "tensor cores, VK_NV_cooperative_matrix fragments" + why;
    case MatrixKernels::cooperative_matrix_khr:
      return "tensor cores, VK_KHR_cooperative_matrix fragments" + why;
    case MatrixKernels::cooperative_matrix2:
      return "tensor cores, VK_NV_cooperative_matrix2 workgroup matrices (linear layers, prefill attention)";
  }
  return "";
}

}  // namespace kv
