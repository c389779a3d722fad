#include <cstdio>
#include <fstream>
#include <sstream>

#include "args.h"
#include "io/capture.h"
#include "commands.h"
#include "base/error.h"
#include "output_files.h"
#include "method_args.h"
#include "model/checkpoint.h"
#include "model/files.h"
#include "model/prompt_capture.h"
#include "model/prompts.h"
#include "model/tokenizer.h"
#include "base/random.h"
#include "validation.h"

namespace kv::cli {

const char* const kCaptureHelp =
    "usage: kvscope capture --model PATH [--tokenizer PATH]\n"
    "                       (--prompt TEXT | --prompt-file F | --passkey --length N --depth D [--seed S]\n"
    "                        | --haystack-file F --needle S [--question Q] --length N --depth D)\n"
    "                       [--layers L1,L2|all] [--chunk B] --out FILE\n\n"
    "Runs a model's prompt through kvscope's own forward pass and writes a capture\n"
    "(docs/capture.md): each layer's queries and keys after RoPE and its values, in\n"
    "the model's dtype, with the token ids and text; passkey and needle prompts also\n"
    "record the needle's token span (needle_span). The prompts are those of\n"
    "tools/export/capture_qkv.py: --passkey builds the passkey prompt of about N tokens with\n"
    "the key (a 5-digit number from --seed, default 0) at depth D (0..1); --haystack-file\n"
    "puts the sentence --needle into the file's text at depth D, cut to about N tokens,\n"
    "then --question. The prompt starts with the model's BOS where it has one.\n"
    "Default --layers: all.\n\n"
    "  --random-weights   --model is a config.json (or its folder), weights drawn on the\n"
    "                     device from --seed: speed at a model's real size (docs/model.md)\n"
    "  --weight-type T    the matrices as ggml blocks of T: q8_0, q4_0, q4_1, q5_0, q5_1,\n"
    "                     q2_k .. q6_k, q4_k_m, q5_k_m (drawn so, or quantized at load), or f16\n";
namespace {

std::vector<uint32_t> parse_layers(const std::string& text, uint32_t layers) {
  std::vector<uint32_t> out;
  if (text == "all") {
    for (uint32_t l = 0; l < layers; ++l) out.push_back(l);
    return out;
  }
  std::stringstream parts(text);
  for (std::string part; std::getline(parts, part, ',');) {
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 6)
      throw InputError("capture: --layers takes all or layer indices, not '" + text + "'");
    const uint32_t l = uint32_t(std::stoul(part));
    if (l >= layers) throw InputError("capture: the model has " + std::to_string(layers) + " layers, not a layer " + part);
    out.push_back(l);
  }
  return out;
}

}  // namespace

int run_capture(const GlobalOptions& global, const std::vector<std::string>& argv) {
  Args args("capture", argv,
            {"model", "tokenizer", "prompt", "prompt-file", "length", "depth", "seed", "weight-type", "haystack-file", "needle",
             "question", "layers", "chunk", "out"},
            {"passkey", "random-weights"});
  if (!args.positional().empty()) throw InputError("capture: unexpected argument '" + args.positional()[0] + "'");
  const int sources = int(args.has("prompt")) + int(args.has("prompt-file")) + int(args.flag("passkey")) +
                      int(args.has("haystack-file"));
  if (sources != 1) throw InputError("capture: give one of --prompt, --prompt-file, --passkey and --haystack-file");
  const std::filesystem::path model_path = args.required("model");
  const std::string out = args.required("out");
  require_output_folder(out);
  const model::Checkpoint checkpoint = open_model_checkpoint(args, model_path);
  const model::ModelConfig& config = checkpoint.config();
  const auto tokenizer = open_model_tokenizer(args, model_path, checkpoint);
  const std::vector<uint32_t> layers = parse_layers(args.text("layers", "all"), config.layers);

  // The prompt, and where its needle lies (in bytes), if it has one.
  model::RetrievalPrompt prompt;
  bool has_needle = false;
  std::string source = "kvscope capture";
  if (args.flag("passkey") || args.has("haystack-file")) {
    model::require_text_tokenizer(*tokenizer, "capture");
    const uint32_t length = args.required_count("length", 16, 1u << 24);
    const std::string depth_text = args.required("depth");
    char* end = nullptr;
    const double depth = std::strtod(depth_text.c_str(), &end);
    if (*end || !(depth >= 0 && depth <= 1)) throw InputError("capture: --depth must be a number in [0, 1], not '" + depth_text + "'");
    if (args.flag("passkey")) {
      Random random(args.count("seed", 0));
      const uint32_t passkey = 10000 + uint32_t(random.below(90000));
      prompt = model::passkey_prompt(*tokenizer, length, depth, passkey);
      source += " --passkey --length " + std::to_string(length) + " --depth " + depth_text + " (passkey " + std::to_string(passkey) + ")";
    } else {
      prompt = model::needle_prompt(*tokenizer, model::read_text_file(args.text("haystack-file")), args.required("needle"),
                                    args.text("question", ""), length, depth);
      source += " --haystack-file " + args.text("haystack-file") + " --length " + std::to_string(length) + " --depth " + depth_text;
    }
    has_needle = true;
  } else {
    prompt.text = args.has("prompt-file") ? model::read_text_file(args.text("prompt-file")) : args.text("prompt");
  }

  vk::Device device(global.device);
  model::PromptCapture captured =
      model::capture_prompt(device, checkpoint, *tokenizer, prompt, has_needle, layers,
                            args.count("chunk", 128, 1, kMaxChunk));
  CaptureData& data = captured.data;
  data.model = model_path.string();
  data.source = source;
  write_capture(out, data);
  std::fprintf(stderr, "kvscope: wrote %s: %zu layers, %zu tokens%s\n", out.c_str(), layers.size(), data.token_ids.size(),
               has_needle ? (", needle at tokens " + std::to_string(data.needle_span->first) + "-" +
                             std::to_string(data.needle_span->second)).c_str()
                          : "");
  return exit_code(global, device, 0);
}

}  // namespace kv::cli
