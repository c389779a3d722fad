#pragma once
#include <gtest/gtest.h>

#include <cstdlib>

#include "vk/device.h"

namespace kv::test {

// One validated device for the whole test binary (creating one per test would
// dominate the suite's time on lavapipe). KVSCOPE_TEST_DEVICE picks it.
inline vk::Device& device() {
  static vk::Device* device = [] {
    vk::DeviceOptions options;
    if (const char* selector = std::getenv("KVSCOPE_TEST_DEVICE")) options.selector = selector;
    options.validation = std::getenv("KVSCOPE_TEST_NO_VALIDATION") == nullptr;
    options.sync_validation = std::getenv("KVSCOPE_TEST_SYNC_VALIDATION") != nullptr;
    return new vk::Device(options);
  }();
  return *device;
}

// Fails the test if the validation layer reported anything while it ran.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override { messages_before_ = device().validation_messages(); }
  void TearDown() override {
    EXPECT_EQ(device().validation_messages(), messages_before_) << "the validation layer reported messages";
  }

 private:
  uint64_t messages_before_ = 0;
};

}  // namespace kv::test
