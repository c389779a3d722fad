#pragma once
// Which tensor-core kernels a device gets, and why: the engine's choices in
// one place, so that `kvscope devices`, --verbose and the kernels agree.
#include <string>

#include "vk/device.h"

namespace kv {

enum class MatrixKernels {
  none,                    // scalar kernels (lavapipe, devices without cooperative matrices)
  cooperative_matrix,      // VK_NV_cooperative_matrix, 16x16x16 subgroup fragments
  cooperative_matrix_khr,  // the same kernels rewritten for VK_KHR_cooperative_matrix
  cooperative_matrix2,     // VK_NV_cooperative_matrix2: workgroup-scope matrices, tensor-addressed loads (*_cm2)
};

// Whether this build wrote the *_cm2 kernels (a glslang that writes
// GL_NV_cooperative_matrix2 was found: tools/build_glslang.sh).
bool cooperative_matrix2_built();
// Whether the engine takes the *_cm2 kernels where it may:
// KVSCOPE_COOPERATIVE_MATRIX2=1. Off by default: on the H100 (driver 580)
// they ran slower than the KHR fragment kernels, linear layers and prefill
// attention alike (docs/perf.md), so a device that has both gets the KHR ones.
bool cooperative_matrix2_chosen();

// The tensor-core kernels the engine takes on `device`, as created (validation matters).
MatrixKernels matrix_kernels(const vk::Device& device);
// For a device not yet created: with a validation layer, or without.
MatrixKernels matrix_kernels(const vk::DeviceInfo& info, bool validation);

// The two kinds of device the engine's shape rules are measured on: GPUs (the
// H100) and CPUs running Vulkan (Mesa's lavapipe, on 2 cores). A rule that
// fills a GPU's many multiprocessors with more, smaller workgroups only adds
// work where a few threads run every workgroup in turn, so a rule tuned on
// one says what it chooses for the other too (tests/test_kernel_choice.cpp).
enum class DeviceClass { gpu, cpu };
DeviceClass device_class(const vk::DeviceInfo& info);

// "cooperative matrix 2 (VK_NV_cooperative_matrix2)", with the reason the
// better kernels are not taken where they are not: one line.
std::string describe_matrix_kernels(const vk::DeviceInfo& info, bool validation);

}  // namespace kv
