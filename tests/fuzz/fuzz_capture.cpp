// libFuzzer target for the capture reader (safetensors + docs/capture.md checks):
// any input must either open as a capture or be refused with InputError;
// a crash, another exception, a sanitizer report or a leak fails the run.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "../temp_files.h"
#include "io/capture.h"
#include "base/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The reader maps a file, so the input goes through one (per process).
  static const std::filesystem::path path = kv::test::temp_path("capture.safetensors");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  try {
    kv::Capture capture(path);
    // Touch what commands read once a capture is open.
    for (const kv::CaptureLayer& layer : capture.layers()) {
      const size_t row = size_t(layer.shape.dim) * kv::dtype_size(layer.dtype);
      (void)kv::to_float(layer.dtype, layer.k->data.first(std::min(row, layer.k->data.size())));
      (void)capture.scale(layer);
    }
    (void)kv::first_non_finite(capture);
    (void)capture.needle_span();
    if (capture.has_token_text()) (void)capture.token_text(capture.tokens() - 1);
    if (capture.has_token_ids()) (void)capture.token_ids();
  } catch (const kv::InputError&) {
  }
  return 0;
}
