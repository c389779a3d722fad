// llama.cpp's Vulkan backend on a GGUF model, as kvscope's peer on the same
// GPU and the same file (docs/perf.md, "llama.cpp's Vulkan backend on the
// same file"):
//   - time to the first token at each context length: the prompt in batches
//     of --batch tokens (n_batch = n_ubatch), flash attention on, F16 KV
//     cache, every layer on the GPU; then decode ms/token at that depth,
//     each token the argmax of the last logits (greedy, as `kvscope speed`);
//   - one layer's MUL_MAT (q, k, v, o, gate, up, down at --kernel-tokens
//     tokens) and FLASH_ATTN_EXT (a chunk of --kernel-tokens queries ending
//     each context) through ggml's graph API (ggml_ops.cpp);
//   - --logits: the logits of every position of a given token sequence, to
//     hold kvscope's forward pass to llama.cpp's on the same file
//     (tests/llamacpp_quantized_test.sh);
//   - --quantize: llama.cpp's own quantizer.
// JSON on stdout, a table on stderr. Linked against the prebuilt libraries
// that tools/peers/llamacpp/install.sh fetches; built by build.sh beside it.
#include <vulkan/vulkan.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml.h"
#include "ggml_ops.h"
#include "llama.h"

#ifndef PEER_SOURCE
#define PEER_SOURCE "unknown"
#endif

namespace {

const char* kUsage =
    "usage: llamacpp_peer --model FILE.gguf [--device NAME] [--contexts 32768,131000] [--batch 2048]\n"
    "                     [--decode-steps 16] [--rounds 2] [--kernel-tokens 2048] [--kernel-contexts C1,C2]\n"
    "                     [--repeat 20] [--parts model,kernels] [--libs DIR] [--verbose]\n"
    "       llamacpp_peer --model FILE.gguf [--device NAME] --logits IDS OUT.json\n"
    "       llamacpp_peer --model FILE.gguf --quantize TYPE OUT.gguf\n"
    "llama.cpp's Vulkan backend on FILE: time to the first token at each context (batches of --batch\n"
    "tokens, flash attention, F16 KV cache, every layer on the GPU), decode ms/token at that depth\n"
    "(--decode-steps timed after one untimed), the median of --rounds; one layer's MUL_MAT and\n"
    "FLASH_ATTN_EXT at --kernel-tokens tokens (attention: a chunk ending each of --kernel-contexts,\n"
    "default --contexts), each the mean of --repeat graph computes (--parts kernels alone: also by\n"
    "ggml's GPU timestamps). --device picks the Vulkan device whose name holds NAME (default: the\n"
    "first GPU, else the first device). --libs: the folder of ggml's backends (default ../lib beside\n"
    "this program). JSON on stdout, a table on stderr. Exit 2 on a bad option, 1 on a failure.\n"
    "--quantize writes FILE's model as llama.cpp's quantizer writes it (llama_model_quantize; TYPE one of\n"
    "Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K_M Q4_K_M Q5_K_M Q6_K): the block-quantized files people have.\n"
    "--logits decodes the token ids IDS (comma-separated, no BOS added) in one batch from position 0 on\n"
    "--device (flash attention, F16 KV cache, every layer on the GPU) and writes the logits of every\n"
    "position to OUT.json: {source, device, ggml_device, model, tokens, vocab, logits: [[vocab floats]\n"
    "a position]}, to compare another engine's forward pass with llama.cpp's on the same file.\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  std::string model, device, libs, quantize_type, quantize_out, logits_out;
  std::vector<uint32_t> contexts{32768}, kernel_contexts;
  std::vector<int32_t> logits_tokens;
  uint32_t batch = 2048, decode_steps = 16, rounds = 2, kernel_tokens = 2048, repeat = 20;
  bool run_model = true, run_kernels = true, verbose = false;
};

std::vector<uint32_t> numbers(const std::string& flag, const std::string& text) {
  std::vector<uint32_t> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    char* end = nullptr;
    const unsigned long value = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end || value == 0 || value > (1ul << 24))
      throw UsageError(flag + ": not a count: '" + item + "'");
    out.push_back(uint32_t(value));
    at = comma + 1;
  }
  return out;
}

// Token ids, 0 among them; the model's vocabulary bounds them once it is loaded.
std::vector<int32_t> token_ids(const std::string& text) {
  std::vector<int32_t> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    char* end = nullptr;
    const unsigned long value = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end || item[0] == '-' || value >= (1ul << 31))
      throw UsageError("--logits: not a token id: '" + item + "'");
    out.push_back(int32_t(value));
    at = comma + 1;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  if (argc == 1) {
    std::fputs(kUsage, stderr);
    std::exit(2);
  }
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (flag == "--verbose") {
      o.verbose = true;
      continue;
    }
    if (flag == "--quantize") {
      if (i + 2 >= argc) throw UsageError("--quantize needs a type and an output file");
      o.quantize_type = argv[++i];
      o.quantize_out = argv[++i];
      continue;
    }
    if (flag == "--logits") {
      if (i + 2 >= argc) throw UsageError("--logits needs token ids and an output file");
      o.logits_tokens = token_ids(argv[++i]);
      o.logits_out = argv[++i];
      continue;
    }
    static const char* kValued[] = {"--model",           "--device", "--libs",         "--contexts",
                                    "--kernel-contexts", "--batch",  "--decode-steps", "--rounds",
                                    "--kernel-tokens",   "--repeat", "--parts"};
    if (std::find_if(std::begin(kValued), std::end(kValued), [&](const char* f) { return flag == f; }) ==
        std::end(kValued))
      throw UsageError("unknown option " + flag);
    if (i + 1 >= argc) throw UsageError(flag + " needs a value");
    const std::string value = argv[++i];
    auto one = [&] { return numbers(flag, value).at(0); };
    if (flag == "--model") o.model = value;
    else if (flag == "--device") o.device = value;
    else if (flag == "--libs") o.libs = value;
    else if (flag == "--contexts") o.contexts = numbers(flag, value);
    else if (flag == "--kernel-contexts") o.kernel_contexts = numbers(flag, value);
    else if (flag == "--batch") o.batch = one();
    else if (flag == "--decode-steps") o.decode_steps = one();
    else if (flag == "--rounds") o.rounds = one();
    else if (flag == "--kernel-tokens") o.kernel_tokens = one();
    else if (flag == "--repeat") o.repeat = one();
    else if (flag == "--parts") {
      o.run_model = value.find("model") != std::string::npos;
      o.run_kernels = value.find("kernels") != std::string::npos;
      if (!o.run_model && !o.run_kernels) throw UsageError("--parts: model, kernels or both");
    }
  }
  if (o.model.empty()) throw UsageError("--model FILE.gguf is required");
  if (!std::filesystem::is_regular_file(o.model)) throw UsageError(o.model + ": no such file");
  if (o.kernel_contexts.empty()) o.kernel_contexts = o.contexts;
  return o;
}

// Log lines: ggml's description of the Vulkan device is kept for the JSON;
// the rest goes to stderr with --verbose, warnings and errors always.
struct Log {
  bool verbose = false;
  std::string device_line;
};
Log g_log;

void log_line(ggml_log_level level, const char* text, void*) {
  const std::string line = text;
  if (line.rfind("ggml_vulkan: 0 = ", 0) == 0) g_log.device_line = line.substr(13, line.find_last_not_of('\n') - 12);
  if (g_log.verbose || level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// The Vulkan device whose name holds `wanted` (any case), or else the first
// discrete GPU, integrated GPU or device: its index among the loader's devices, which
// ggml's backend is told through GGML_VK_VISIBLE_DEVICES (it would pass over
// a CPU device such as lavapipe on its own).
uint32_t vulkan_device(const std::string& wanted, std::string& name) {
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  VkInstance instance;
  if (const VkResult r = vkCreateInstance(&info, nullptr, &instance); r != VK_SUCCESS)
    throw std::runtime_error("vkCreateInstance: VkResult " + std::to_string(int(r)));
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(instance, &n, nullptr);
  std::vector<VkPhysicalDevice> devices(n);
  vkEnumeratePhysicalDevices(instance, &n, devices.data());
  std::vector<VkPhysicalDeviceProperties> props(n);
  for (uint32_t i = 0; i < n; ++i) vkGetPhysicalDeviceProperties(devices[i], &props[i]);
  vkDestroyInstance(instance, nullptr);
  std::string names;
  for (const auto& p : props) names += std::string(names.empty() ? "" : ", ") + p.deviceName;
  for (uint32_t i = 0; i < n && !wanted.empty(); ++i)
    if (lower(props[i].deviceName).find(lower(wanted)) != std::string::npos) {
      name = props[i].deviceName;
      return i;
    }
  for (const VkPhysicalDeviceType type : {VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU})
    for (uint32_t i = 0; i < n && wanted.empty(); ++i)
      if (props[i].deviceType == type) {
        name = props[i].deviceName;
        return i;
      }
  if (wanted.empty() && n > 0) {
    name = props[0].deviceName;
    return 0;
  }
  throw std::runtime_error("no Vulkan device" + (wanted.empty() ? "" : " named like '" + wanted + "'") +
                           " (there are: " + (names.empty() ? "none" : names) + ")");
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string meta(const llama_model* model, const std::string& key) {
  char buf[256];
  return llama_model_meta_val_str(model, key.c_str(), buf, sizeof buf) < 0 ? "" : buf;
}

// From the metadata, which a model loaded for its vocabulary alone also has.
peer::LayerShape layer_shape(const llama_model* model) {
  const std::string arch = meta(model, "general.architecture");
  auto count = [&](const std::string& key, uint32_t otherwise) {
    const std::string value = meta(model, arch + "." + key);
    if (value.empty() && otherwise == 0)
      throw std::runtime_error(arch + "." + key + " missing from the model's metadata");
    return value.empty() ? otherwise : uint32_t(std::stoul(value));
  };
  peer::LayerShape s{};
  s.layers = count("block_count", 0);
  s.hidden = count("embedding_length", 0);
  s.heads = count("attention.head_count", 0);
  s.kv_heads = count("attention.head_count_kv", s.heads);
  s.head_dim = count("attention.key_length", s.hidden / s.heads);
  s.intermediate = count("feed_forward_length", 0);
  return s;
}

struct Run {
  uint32_t context;
  std::vector<double> ttft_ms, decode_ms;  // a value a round
};

int32_t argmax(const float* logits, int32_t n) { return int32_t(std::max_element(logits, logits + n) - logits); }

// The prompt through llama_decode in batches of `batch`; the first token's ms and id.
std::pair<double, int32_t> prefill(llama_context* ctx, std::vector<llama_token>& prompt, uint32_t length,
                                   uint32_t batch, int32_t vocab) {
  const double start = now_ms();
  for (uint32_t at = 0; at < length; at += batch) {
    const int32_t n = int32_t(std::min(batch, length - at));
    if (const int32_t r = llama_decode(ctx, llama_batch_get_one(prompt.data() + at, n)); r != 0)
      throw std::runtime_error("llama_decode of a prompt batch returned " + std::to_string(r));
  }
  const int32_t token = argmax(llama_get_logits_ith(ctx, -1), vocab);
  return {now_ms() - start, token};
}

double decode(llama_context* ctx, int32_t token, uint32_t steps, int32_t vocab) {
  double start = 0;
  for (uint32_t step = 0; step <= steps; ++step) {  // the first untimed
    if (step == 1) start = now_ms();
    if (const int32_t r = llama_decode(ctx, llama_batch_get_one(&token, 1)); r != 0)
      throw std::runtime_error("llama_decode of a step returned " + std::to_string(r));
    token = argmax(llama_get_logits_ith(ctx, -1), vocab);
  }
  return (now_ms() - start) / steps;
}

std::vector<Run> run_model(llama_model* model, const Options& o) {
  const uint32_t longest = *std::max_element(o.contexts.begin(), o.contexts.end());
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = longest + o.decode_steps + 2;
  cp.n_batch = cp.n_ubatch = o.batch;
  cp.n_seq_max = 1;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_ENABLED;
  cp.type_k = cp.type_v = GGML_TYPE_F16;
  cp.offload_kqv = true;
  cp.no_perf = true;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx)
    throw std::runtime_error("llama_init_from_model failed (the KV cache of " + std::to_string(cp.n_ctx) +
                             " positions?)");
  const int32_t vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  std::vector<llama_token> prompt(longest);
  uint64_t x = 12345;
  for (llama_token& t : prompt) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    t = llama_token((x >> 33) % uint64_t(vocab));
  }
  llama_memory_t memory = llama_get_memory(ctx);
  // Untimed: two batches and two steps, so that the pipelines are built before any round.
  llama_memory_clear(memory, false);
  decode(ctx, prefill(ctx, prompt, std::min(longest, 2 * o.batch), o.batch, vocab).second, 1, vocab);
  std::vector<Run> runs;
  for (uint32_t context : o.contexts) {
    Run run{context, {}, {}};
    for (uint32_t round = 0; round < o.rounds; ++round) {
      llama_memory_clear(memory, false);
      const auto [ms, token] = prefill(ctx, prompt, context, o.batch, vocab);
      run.ttft_ms.push_back(ms);
      run.decode_ms.push_back(decode(ctx, token, o.decode_steps, vocab));
      std::fprintf(stderr, "llamacpp_peer: context %u round %u: first token %.1f ms, decode %.3f ms/token\n", context,
                   round + 1, run.ttft_ms.back(), run.decode_ms.back());
    }
    runs.push_back(run);
  }
  llama_free(ctx);
  return runs;
}

std::string json_text(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (uint8_t(c) >= 0x20) out += c;
  }
  return out + "\"";
}

std::string json_list(const std::vector<double>& v) {
  std::string out = "[";
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.4f", i ? ", " : "", v[i]);
    out += buf;
  }
  return out + "]";
}

// ggml's Vulkan device for o.device, with ggml's backends loaded from o.libs.
ggml_backend_dev_t vulkan_backend(const Options& o, std::string& device_name) {
  g_log.verbose = o.verbose;
  ggml_log_set(log_line, nullptr);
  llama_log_set(log_line, nullptr);
  const uint32_t index = vulkan_device(o.device, device_name);
  setenv("GGML_VK_VISIBLE_DEVICES", std::to_string(index).c_str(), 1);
  // The kernels alone are timed by ggml's own GPU timestamps too; a model's
  // runs never are (the logger would time, and print, every node of theirs).
  if (o.run_model) unsetenv("GGML_VK_PERF_LOGGER");
  else setenv("GGML_VK_PERF_LOGGER", "1", 1), unsetenv("GGML_VK_PERF_LOGGER_FREQUENCY");
  std::string libs = o.libs;
  if (libs.empty()) libs = (std::filesystem::canonical("/proc/self/exe").parent_path() / ".." / "lib").string();
  ggml_backend_load_all_from_path(libs.c_str());
  llama_backend_init();
  ggml_backend_dev_t device = nullptr;
  for (size_t i = 0; i < ggml_backend_dev_count() && !device; ++i) {
    ggml_backend_dev_t d = ggml_backend_dev_get(i);
    if (std::string(ggml_backend_reg_name(ggml_backend_dev_backend_reg(d))) == "Vulkan") device = d;
  }
  if (!device) throw std::runtime_error("ggml has no Vulkan device: libggml-vulkan.so not in " + libs + "?");
  return device;
}

llama_model* load_model(const Options& o, ggml_backend_dev_t device) {
  llama_model_params mp = llama_model_default_params();
  ggml_backend_dev_t devices[] = {device, nullptr};
  mp.devices = devices;
  mp.n_gpu_layers = -1;          // every layer
  mp.vocab_only = !o.run_model;  // the kernels need only the shape
  llama_model* model = llama_model_load_from_file(o.model.c_str(), mp);
  if (!model) throw std::runtime_error(o.model + ": llama.cpp could not load it (--verbose says why)");
  return model;
}

int run(const Options& o) {
  std::string device_name;
  ggml_backend_dev_t device = vulkan_backend(o, device_name);
  const double load_start = now_ms();
  llama_model* model = load_model(o, device);
  const double load_ms = now_ms() - load_start;
  const peer::LayerShape shape = layer_shape(model);

  std::vector<peer::OpTime> ops;
  if (o.run_kernels) {
    ops = peer::time_products(device, shape, o.kernel_tokens, o.repeat);
    for (uint32_t context : o.kernel_contexts)
      ops.push_back(peer::time_attention(device, shape, std::min(o.kernel_tokens, context), context, o.repeat));
  }
  std::vector<Run> runs;
  if (o.run_model) runs = run_model(model, o);

  char buf[512];
  std::string out = "{\n  \"peer\": \"llama.cpp Vulkan\",\n  \"source\": " + json_text(PEER_SOURCE) +
                    ",\n  \"device\": " + json_text(device_name) +
                    ",\n  \"ggml_device\": " + json_text(g_log.device_line) +
                    ",\n  \"model\": " + json_text(std::filesystem::absolute(o.model).string()) + ",\n";
  std::snprintf(buf, sizeof buf,
                "  \"shape\": {\"layers\": %u, \"hidden\": %u, \"heads\": %u, \"kv_heads\": %u, \"head_dim\": %u, "
                "\"intermediate\": %u, \"vocab\": %d},\n  \"load_ms\": %.1f,\n  \"batch\": %u, \"flash_attn\": true, "
                "\"kv_type\": \"f16\", \"decode_steps\": %u, \"rounds\": %u,\n",
                shape.layers, shape.hidden, shape.heads, shape.kv_heads, shape.head_dim, shape.intermediate,
                llama_vocab_n_tokens(llama_model_get_vocab(model)), o.run_model ? load_ms : 0.0, o.batch,
                o.decode_steps, o.rounds);
  out += buf;
  out += "  \"runs\": [";
  for (size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    std::snprintf(buf, sizeof buf, "%s\n    {\"context\": %u, \"ttft_ms\": %.2f, \"decode_ms_per_token\": %.4f, ",
                  i ? "," : "", r.context, median(r.ttft_ms), median(r.decode_ms));
    out += buf + std::string("\"ttft_ms_rounds\": ") + json_list(r.ttft_ms) +
           ", \"decode_ms_rounds\": " + json_list(r.decode_ms) + "}";
  }
  out += "\n  ],\n  \"kernel_tokens\": " + std::to_string(o.kernel_tokens) +
         ", \"repeat\": " + std::to_string(o.repeat) + ",\n  \"ops\": [";
  for (size_t i = 0; i < ops.size(); ++i) {
    const peer::OpTime& t = ops[i];
    std::snprintf(buf, sizeof buf,
                  "%s\n    {\"op\": \"%s\", \"name\": \"%s\", \"rows\": %llu, \"columns\": %llu, \"tokens\": %llu, "
                  "\"context\": %llu, \"activations\": \"%s\", \"us\": %.2f, \"gpu_us\": %.2f, \"tflops\": %.4g}",
                  i ? "," : "", t.name == "attention" ? "FLASH_ATTN_EXT" : "MUL_MAT", t.name.c_str(),
                  (unsigned long long)t.rows, (unsigned long long)t.columns, (unsigned long long)t.tokens,
                  (unsigned long long)t.context, t.activations.c_str(), t.us, t.gpu_us, t.tflops);
    out += buf;
  }
  out += "\n  ]\n}\n";
  std::fputs(out.c_str(), stdout);

  std::fprintf(stderr, "llama.cpp Vulkan (%s) on %s\n", PEER_SOURCE, device_name.c_str());
  for (const Run& r : runs)
    std::fprintf(stderr, "  context %7u: first token %10.1f ms, decode %8.3f ms/token\n", r.context, median(r.ttft_ms),
                 median(r.decode_ms));
  // GPU time where the perf logger gave one, else the wall clock.
  const bool gpu = !ops.empty() && ops[0].gpu_us > 0;
  const char* clock = gpu ? "GPU timestamps" : "wall clock, a submission and a wait each";
  double layer_us[2] = {0, 0};
  for (const peer::OpTime& t : ops) {
    const double us = gpu ? t.gpu_us : t.us;
    if (t.name == "attention")
      std::fprintf(stderr, "  FLASH_ATTN_EXT, %llu queries ending %llu keys: %.1f us, %.4g TFLOP/s (%s)\n",
                   (unsigned long long)t.tokens, (unsigned long long)t.context, us, t.tflops, clock);
    else layer_us[t.activations == "f16"] += us;
  }
  if (!ops.empty())
    std::fprintf(stderr,
                 "  MUL_MAT, a layer's 7 products at %u tokens: %.1f us with F32 activations, %.1f with F16 (%s)\n",
                 o.kernel_tokens, layer_us[0], layer_us[1], clock);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}

// o.logits_tokens through the model in one batch, every position's logits into o.logits_out.
int logits(const Options& o) {
  std::string device_name;
  ggml_backend_dev_t device = vulkan_backend(o, device_name);
  llama_model* model = load_model(o, device);
  const int32_t vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  const int32_t n = int32_t(o.logits_tokens.size());
  for (int32_t id : o.logits_tokens)
    if (id >= vocab)
      throw std::runtime_error("--logits: token id " + std::to_string(id) + " is past the vocabulary (" +
                               std::to_string(vocab) + ")");
  // The settings of run_model's prefill, so that these are the logits whose speed it times.
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = cp.n_batch = cp.n_ubatch = uint32_t(n);
  cp.n_seq_max = 1;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_ENABLED;
  cp.type_k = cp.type_v = GGML_TYPE_F16;
  cp.offload_kqv = true;
  cp.no_perf = true;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) throw std::runtime_error("llama_init_from_model failed");
  llama_batch batch = llama_batch_init(n, 0, 1);
  for (int32_t i = 0; i < n; ++i) {
    batch.token[i] = o.logits_tokens[i];
    batch.pos[i] = i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  batch.n_tokens = n;
  if (const int32_t r = llama_decode(ctx, batch); r != 0)
    throw std::runtime_error("llama_decode of the tokens returned " + std::to_string(r));

  std::string out = "{\n  \"peer\": \"llama.cpp Vulkan\",\n  \"source\": " + json_text(PEER_SOURCE) +
                    ",\n  \"device\": " + json_text(device_name) +
                    ",\n  \"ggml_device\": " + json_text(g_log.device_line) +
                    ",\n  \"model\": " + json_text(std::filesystem::absolute(o.model).string()) +
                    ",\n  \"tokens\": [";
  for (int32_t i = 0; i < n; ++i) out += (i ? ", " : "") + std::to_string(o.logits_tokens[i]);
  out += "],\n  \"vocab\": " + std::to_string(vocab) + ",\n  \"logits\": [";
  char buf[32];
  for (int32_t i = 0; i < n; ++i) {
    const float* row = llama_get_logits_ith(ctx, i);
    if (!row) throw std::runtime_error("llama.cpp kept no logits for position " + std::to_string(i));
    out += i ? ",\n    [" : "\n    [";
    for (int32_t v = 0; v < vocab; ++v) {
      std::snprintf(buf, sizeof buf, "%s%.9g", v ? ", " : "", row[v]);  // a float32 exactly
      out += buf;
    }
    out += "]";
  }
  out += "\n  ]\n}\n";
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  FILE* f = std::fopen(o.logits_out.c_str(), "w");
  if (!f || std::fputs(out.c_str(), f) < 0 || std::fclose(f) != 0)
    throw std::runtime_error(o.logits_out + ": could not be written");
  std::fprintf(stderr, "llamacpp_peer: the logits of %d positions on %s (%s) into %s\n", n, device_name.c_str(),
               PEER_SOURCE, o.logits_out.c_str());
  return 0;
}

// llama.cpp's quantizer on o.model into o.quantize_out.
int quantize(const Options& o) {
  static const std::pair<const char*, llama_ftype> kTypes[] = {
      {"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},     {"Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},     {"Q4_1", LLAMA_FTYPE_MOSTLY_Q4_1},
      {"Q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},     {"Q5_1", LLAMA_FTYPE_MOSTLY_Q5_1},     {"Q2_K", LLAMA_FTYPE_MOSTLY_Q2_K},
      {"Q3_K_M", LLAMA_FTYPE_MOSTLY_Q3_K_M}, {"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M}, {"Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M},
      {"Q6_K", LLAMA_FTYPE_MOSTLY_Q6_K}};
  const auto found = std::find_if(std::begin(kTypes), std::end(kTypes), [&](const auto& t) { return o.quantize_type == t.first; });
  if (found == std::end(kTypes)) throw UsageError("--quantize: no type " + o.quantize_type);
  llama_log_set(log_line, nullptr);
  llama_backend_init();
  llama_model_quantize_params params = llama_model_quantize_default_params();
  params.ftype = found->second;
  const uint32_t failed = llama_model_quantize(o.model.c_str(), o.quantize_out.c_str(), &params);
  llama_backend_free();
  if (failed) throw std::runtime_error("llama_model_quantize failed on " + o.model);
  std::fprintf(stderr, "llamacpp_peer: wrote %s (%s)\n", o.quantize_out.c_str(), found->first);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options options = parse(argc, argv);
    if (!options.quantize_type.empty()) return quantize(options);
    if (!options.logits_out.empty()) return logits(options);
    return run(options);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "llamacpp_peer: %s (--help for usage)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "llamacpp_peer: %s\n", e.what());
    return 1;
  }
}
