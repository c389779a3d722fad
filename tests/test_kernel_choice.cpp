// The engine's shape rules, for device descriptions rather than devices: a
// rule tuned on one kind of device says what it chooses for the others, and
// this holds it to that on a machine that has neither.
#include <gtest/gtest.h>

#include <cstdlib>

#include "kernels/kernel_choice.h"
#include "model/kernels.h"

namespace kv {
namespace {

vk::DeviceInfo lavapipe_like() {
  vk::DeviceInfo info;
  info.name = "llvmpipe (LLVM 15.0.6, 256 bits)";
  info.type = "cpu";
  info.subgroup_size = 8;
  info.loop_limit = 65535;
  info.costly_values_across_barriers = true;
  return info;
}

vk::DeviceInfo h100_like() {
  vk::DeviceInfo info;
  info.name = "NVIDIA H100 80GB HBM3";
  info.type = "discrete";
  info.subgroup_size = 32;
  info.cooperative_matrix = info.cooperative_matrix_khr = info.cooperative_matrix2 = true;
  return info;
}

TEST(KernelChoice, DeviceClassFollowsTheDeviceType) {
  EXPECT_EQ(device_class(lavapipe_like()), DeviceClass::cpu);
  EXPECT_EQ(device_class(h100_like()), DeviceClass::gpu);
  vk::DeviceInfo integrated = h100_like();
  integrated.type = "integrated";
  EXPECT_EQ(device_class(integrated), DeviceClass::gpu);
}

// model_matvec's slices: one everywhere on a CPU (docs/perf.md, lavapipe's
// decode step); on a GPU two where each slice keeps two 512-byte reads of a
// row (n_in of 4 x 256 channels at least), else one.
TEST(KernelChoice, MatvecSlicesPerDeviceClass) {
  if (std::getenv("KVSCOPE_MATVEC_SLICES")) GTEST_SKIP() << "KVSCOPE_MATVEC_SLICES forces every product's slices";
  const DeviceClass cpu = device_class(lavapipe_like()), gpu = device_class(h100_like());
  for (uint32_t n_in : {8u, 64u, 256u, 704u, 1024u, 1408u, 4096u, 14336u, 100u, 4100u}) {
    SCOPED_TRACE("n_in " + std::to_string(n_in));
    EXPECT_EQ(model::ModelKernels::matvec_slices(cpu, n_in), 1u);
  }
  EXPECT_EQ(model::ModelKernels::matvec_slices(gpu, 256), 1u);
  EXPECT_EQ(model::ModelKernels::matvec_slices(gpu, 768), 1u);
  EXPECT_EQ(model::ModelKernels::matvec_slices(gpu, 1024), 2u);
  EXPECT_EQ(model::ModelKernels::matvec_slices(gpu, 4096), 2u);
  EXPECT_EQ(model::ModelKernels::matvec_slices(gpu, 14336), 2u);
  // Rows not in 8-channel pieces read 64 channels a step: 196 of them take four.
  EXPECT_EQ(model::ModelKernels::matvec_slices(gpu, 190), 1u);
  EXPECT_EQ(model::ModelKernels::matvec_slices(gpu, 196), 2u);
}

// model_matvec takes RMSNorm's scale after the weights' stream on a GPU, before it on a CPU.
TEST(KernelChoice, MatvecNormPerDeviceClass) {
  EXPECT_FALSE(model::ModelKernels::matvec_norm_after_stream(device_class(lavapipe_like())));
  EXPECT_TRUE(model::ModelKernels::matvec_norm_after_stream(device_class(h100_like())));
}

// A decode step's RoPE rides in the q/k/v dispatch on a GPU, in its own on a CPU.
TEST(KernelChoice, RopeInQkvDispatchPerDeviceClass) {
  EXPECT_FALSE(model::ModelKernels::rope_in_qkv_dispatch(device_class(lavapipe_like())));
  EXPECT_TRUE(model::ModelKernels::rope_in_qkv_dispatch(device_class(h100_like())));
}

}  // namespace
}  // namespace kv
