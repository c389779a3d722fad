#pragma once
// Room base/: the vocabulary every other room shares (errors, fp16 and bf16
// words, seeded random numbers, medians); it includes nothing of kvscope's.
#include <stdexcept>
#include <string>

namespace kv {

// Bad input from the user or a file: the CLI exits 2. The message names the
// thing that is wrong in the engine's words; `setting`, where there is one,
// names the setting it concerns ("dense_layers", "budgets", "tokenizer"), so
// that the CLI and the viewer can name their own flag or control for it.
struct InputError : std::runtime_error {
  explicit InputError(const std::string& message, std::string setting_name = "")
      : std::runtime_error(message), setting(std::move(setting_name)) {}
  std::string setting;
};

// A Vulkan call or the device failed: the CLI exits 1.
struct DeviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace kv
