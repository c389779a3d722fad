// libFuzzer target for the model runner's readers: the input's first byte picks
// one (0 config.json, 1 tokenizer.json, 2 a llama2.c checkpoint, 3 a llama2.c
// tokenizer, 4 a safetensors shard index, 5 a GGUF file's container), the
// rest is its file. Any input must
// be read or refused with InputError; a crash, another exception, a sanitizer
// report or a leak fails the run.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "../temp_files.h"
#include "base/error.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "formats/gguf.h"
#include "model/gguf_model.h"
#include "model/tokenizer.h"

namespace {

const char* const kTinyConfig =
    R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 8, "intermediate_size": 8, "vocab_size": 8,
        "max_position_embeddings": 16, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": true})";

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), std::streamsize(text.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 6) {
      case 0:
        (void)kv::model::parse_hf_config(file, "config.json");
        break;
      case 1: {
        const auto tokenizer = kv::model::parse_hf_tokenizer(file, "tokenizer.json");
        // Encoding and decoding must hold for any text the tokenizer can take.
        for (int32_t id : tokenizer->encode("Hello 123, <|endoftext|> \xe2\x82\xac \xff world!\n\n"))
          (void)tokenizer->decode(-1, id);
        break;
      }
      case 2: {
        std::vector<std::byte> bytes(file.size());
        if (!file.empty()) std::memcpy(bytes.data(), file.data(), file.size());
        (void)kv::model::Checkpoint::from_llama2c(std::move(bytes), "model.bin");
        break;
      }
      case 3: {
        if (file.size() < 2) break;
        const uint32_t vocab = uint8_t(file[0]) | (uint32_t(uint8_t(file[1])) << 8);
        const auto tokenizer = kv::model::parse_llama2c_tokenizer(file.substr(2), vocab, "tok.bin");
        for (int32_t id : tokenizer->encode("Once upon a time \xc3\xa9")) (void)tokenizer->decode(1, id);
        break;
      }
      case 4: {
        // The index goes into a model directory beside a fixed config.json (per process).
        static const std::filesystem::path dir = kv::test::temp_path("model");
        std::filesystem::create_directories(dir);
        write(dir / "config.json", kTinyConfig);
        write(dir / "model.safetensors.index.json", file);
        (void)kv::model::Checkpoint::open(dir);
        break;
      }
      case 5: {
        const kv::formats::GgufFile gguf = kv::formats::parse_gguf(std::as_bytes(std::span(file)), "model.gguf");
        // Every tensor lies within the file.
        for (const kv::formats::GgufTensor& t : gguf.tensors)
          if (!t.data.empty() && (t.data.data() < reinterpret_cast<const std::byte*>(file.data()) ||
                                  t.data.data() + t.data.size() > reinterpret_cast<const std::byte*>(file.data()) + file.size()))
            __builtin_trap();
        (void)kv::model::gguf_tokenizer_json(gguf, "model.gguf");
        (void)kv::model::gguf_model_config(gguf, "model.gguf");
        break;
      }
    }
  } catch (const kv::InputError&) {
  }
  return 0;
}
