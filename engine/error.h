#pragma once
#include <stdexcept>
#include <string>

namespace kv {

// Bad input from the user or a file: the CLI exits 2.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A Vulkan call or the device failed: the CLI exits 1.
struct DeviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace kv
