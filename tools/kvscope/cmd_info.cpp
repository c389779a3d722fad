#include <cstdio>
#include <filesystem>

#include "args.h"
#include "io/capture.h"
#include "commands.h"
#include "base/error.h"
#include "format.h"

namespace kv::cli {

const char* const kInfoHelp =
    "usage: kvscope info FILE\n\n"
    "Describes a capture (docs/capture.md): model, source, tokens, and\n"
    "per layer the head counts H and G, group size r, length T, head dimension d,\n"
    "dtype and logit scale, and whether every q, k and v value is finite (the first\n"
    "NaN or Inf by tensor, head, token and channel; other commands refuse such a\n"
    "capture unless given --allow-nonfinite). A malformed file is refused with a\n"
    "one-line error.\n";

int run_info(const GlobalOptions&, const std::vector<std::string>& argv) {
  Args args("info", argv, {}, {});
  if (args.positional().size() != 1) throw InputError("info: expects exactly one FILE");
  const std::filesystem::path path = args.positional()[0];
  Capture capture(path);
  std::printf("file      %s (%s)\n", path.c_str(), human_bytes(std::filesystem::file_size(path)).c_str());
  std::printf("model     %s\n", capture.model().c_str());
  std::printf("source    %s\n", capture.source().c_str());
  std::printf("tokens    %u (ids: %s, text: %s)\n", capture.tokens(), capture.has_token_ids() ? "yes" : "no",
              capture.has_token_text() ? "yes" : "no");
  std::printf("layers    %zu\n", capture.layers().size());
  const std::optional<NonFiniteValue> bad = first_non_finite(capture);
  std::printf("values    %s\n\n", bad ? ("NOT FINITE: " + bad->describe()).c_str() : "all finite");
  std::printf("%-6s %-5s %-5s %-4s %-8s %-5s %-6s %s\n", "layer", "H", "G", "r", "T", "d", "dtype", "scale");
  for (const CaptureLayer& l : capture.layers())
    std::printf("%-6d %-5u %-5u %-4u %-8u %-5u %-6s %.6g\n", l.index, l.shape.heads, l.shape.kv_heads, l.shape.group(),
                l.shape.tokens, l.shape.dim, dtype_name(l.dtype), capture.scale(l));
  if (capture.has_token_text()) {
    std::string text;
    for (uint32_t i = 0; i < std::min<uint32_t>(capture.tokens(), 24); ++i) text += capture.token_text(i);
    std::printf("\ntext      %s%s\n", text.c_str(), capture.tokens() > 24 ? " ..." : "");
  }
  return 0;
}

}  // namespace kv::cli
