// The GGUF container reader (engine/formats/gguf.h) on files the test writes:
// metadata of every type and tensors of each type read back where they lie;
// every truncation, and each kind of bad header, refused in one line before
// anything the file claims is allocated.
#include <gtest/gtest.h>

#include <cmath>
#include <span>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "gguf_writer.h"
#include "model/config.h"
#include "formats/gguf.h"
#include "model/gguf_model.h"

namespace kv {
namespace {

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> dims;
  uint32_t type;
  size_t bytes;
};

// Header, metadata (a u32, a string, an f32, a bool, an array of strings, an
// i64), tensor infos, padding, then each tensor's bytes (value: its index + 1).
std::vector<std::byte> tiny_gguf(const std::vector<TensorSpec>& tensors) {
  test::GgufWriter w;
  w.out = {std::byte{'G'}, std::byte{'G'}, std::byte{'U'}, std::byte{'F'}};
  w.put<uint32_t>(3);
  w.put<uint64_t>(tensors.size());
  w.put<uint64_t>(6);
  w.key("llama.block_count", 4);  // u32
  w.put<uint32_t>(2);
  w.key("general.architecture", 8);  // string
  w.text("llama");
  w.key("llama.rope.freq_base", 6);  // f32
  w.put<float>(10000.0f);
  w.key("tokenizer.ggml.add_bos_token", 7);  // bool
  w.put<uint8_t>(1);
  w.key("tokenizer.ggml.tokens", 9);  // an array of strings
  w.put<uint32_t>(8);
  w.put<uint64_t>(3);
  for (const char* t : {"a", "b", "ab"}) w.text(t);
  w.key("general.file_type", 11);  // i64
  w.put<int64_t>(-5);
  uint64_t offset = 0;
  for (const TensorSpec& t : tensors) {
    w.text(t.name);
    w.put<uint32_t>(uint32_t(t.dims.size()));
    for (uint64_t d : t.dims) w.put<uint64_t>(d);
    w.put<uint32_t>(t.type);
    w.put<uint64_t>(offset);
    offset += (t.bytes + 31) / 32 * 32;
  }
  w.pad(32);
  for (size_t i = 0; i < tensors.size(); ++i) {
    w.out.insert(w.out.end(), tensors[i].bytes, std::byte(i + 1));
    w.pad(32);
  }
  return w.out;
}

const std::vector<TensorSpec> kTensors = {
    {"token_embd.weight", {8, 3}, 1, 48},     // F16 [3, 8]
    {"output_norm.weight", {8}, 0, 32},       // F32
    {"blk.0.attn_q.weight", {8, 2}, 30, 32},  // BF16
    {"blk.0.ffn_down.weight", {64, 1}, 8, 68},  // Q8_0: two blocks of 34 bytes
};

TEST(Gguf, ReadsMetadataAndTensorsWhereTheyLie) {
  const std::vector<std::byte> bytes = tiny_gguf(kTensors);
  const formats::GgufFile f = formats::parse_gguf(bytes, "tiny.gguf");
  EXPECT_EQ(f.version, 3u);
  EXPECT_EQ(f.metadata["llama.block_count"], 2);
  EXPECT_EQ(f.metadata["general.architecture"], "llama");
  EXPECT_EQ(f.metadata["llama.rope.freq_base"], 10000.0);
  EXPECT_EQ(f.metadata["tokenizer.ggml.add_bos_token"], true);
  EXPECT_EQ(f.metadata["tokenizer.ggml.tokens"], nlohmann::json::array({"a", "b", "ab"}));
  EXPECT_EQ(f.metadata["general.file_type"], -5);
  ASSERT_EQ(f.tensors.size(), kTensors.size());
  for (size_t i = 0; i < kTensors.size(); ++i) {
    SCOPED_TRACE(kTensors[i].name);
    EXPECT_EQ(f.tensors[i].name, kTensors[i].name);
    EXPECT_EQ(f.tensors[i].dims, kTensors[i].dims);
    EXPECT_EQ(uint32_t(f.tensors[i].type), kTensors[i].type);
    ASSERT_EQ(f.tensors[i].data.size(), kTensors[i].bytes);
    for (std::byte b : f.tensors[i].data) ASSERT_EQ(b, std::byte(i + 1));
  }
}

// Refused in one line naming the file; never anything but InputError.
void expect_refused(const std::vector<std::byte>& bytes, const std::string& says) {
  try {
    (void)formats::parse_gguf(bytes, "bad.gguf");
    ADD_FAILURE() << "accepted a file that should say '" << says << "'";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("bad.gguf"), std::string::npos) << what;
    EXPECT_NE(what.find(says), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(Gguf, RefusesEveryTruncation) {
  const std::vector<std::byte> bytes = tiny_gguf(kTensors);
  for (size_t n = 0; n < bytes.size(); ++n) {
    // A cut inside the last tensor's padding still holds every tensor.
    if (n >= bytes.size() - 28) continue;
    SCOPED_TRACE("first " + std::to_string(n) + " bytes");
    EXPECT_THROW((void)formats::parse_gguf(std::span(bytes).first(n), "cut.gguf"), InputError);
  }
}

// Patches a copy of the good file at the byte where `what` lies.
std::vector<std::byte> patched(size_t at, const void* value, size_t size) {
  std::vector<std::byte> bytes = tiny_gguf(kTensors);
  std::memcpy(bytes.data() + at, value, size);
  return bytes;
}

TEST(Gguf, RefusesBadHeadersCountsTypesAndOffsets) {
  const uint32_t version1 = 1;
  expect_refused(patched(4, &version1, 4), "version 1");
  expect_refused(patched(0, "GGML", 4), "magic");
  const uint64_t huge = uint64_t(1) << 60;
  expect_refused(patched(8, &huge, 8), "tensor count");
  expect_refused(patched(16, &huge, 8), "metadata count");
  // The first metadata key's length: 8 + 4 + 8 + 8 = byte 24.
  expect_refused(patched(24, &huge, 8), "past the end");
  // Tensors: the types and offsets follow the metadata; find them by name.
  const std::vector<std::byte> good = tiny_gguf(kTensors);
  auto after_name = [&](const std::string& name) {
    const auto* p = reinterpret_cast<const char*>(good.data());
    const std::string all(p, good.size());
    return all.find(name) + name.size();
  };
  const size_t q = after_name("blk.0.attn_q.weight");  // n_dims (4), two dims (16), type (4), offset (8)
  const uint32_t unknown_type = 23, five_dims = 5;      // IQ4_XS: not read
  expect_refused(patched(q + 20, &unknown_type, 4), "type IQ4_XS is not read");
  expect_refused(patched(q, &five_dims, 4), "5 dimensions");
  const uint64_t misaligned = 8, far = 1 << 20;
  expect_refused(patched(q + 24, &misaligned, 8), "not aligned");
  expect_refused(patched(q + 24, &far, 8), "past the data");
  const uint64_t many = uint64_t(1) << 40;  // elements past anything the file holds, without an overflow
  expect_refused(patched(q + 4, &many, 8), "more elements than the file holds");
  const uint64_t odd_row = 48;  // a Q8_0 row of 48 is not whole blocks
  expect_refused(patched(after_name("blk.0.ffn_down.weight") + 4, &odd_row, 8), "whole blocks");
  // A string that is not UTF-8 (GGUF's strings are), in a value and in a key.
  const uint8_t bad_byte = 0xff;
  expect_refused(patched(after_name("general.architecture") + 4 + 8, &bad_byte, 1), "a string that is not UTF-8");
  expect_refused(patched(24 + 8, &bad_byte, 1), "a metadata key that is not UTF-8");
}

// A llama file's metadata as the config.json it stands for: the llama.* keys,
// the vocabulary from the tokens, tied without output.weight, RoPE on
// neighbouring channels, YaRN's keys; other architectures, partial RoPE,
// unknown scalings and Llama 3's frequency tensor refused naming the key.
TEST(Gguf, LlamaMetadataIsTheModelsConfig) {
  formats::GgufFile f;
  f.metadata = {{"general.architecture", "llama"},
                {"llama.embedding_length", 64},
                {"llama.block_count", 2},
                {"llama.attention.head_count", 4},
                {"llama.attention.head_count_kv", 2},
                {"llama.feed_forward_length", 96},
                {"llama.context_length", 512},
                {"llama.attention.layer_norm_rms_epsilon", 1e-5},
                {"llama.rope.freq_base", 500000.0},
                {"llama.rope.dimension_count", 16},
                {"tokenizer.ggml.tokens", nlohmann::json::array({"a", "b", "c"})},
                {"tokenizer.ggml.bos_token_id", 1},
                {"tokenizer.ggml.eos_token_id", 2}};
  model::ModelConfig c = model::gguf_model_config(f, "m.gguf");
  EXPECT_EQ(c.hidden, 64u);
  EXPECT_EQ(c.layers, 2u);
  EXPECT_EQ(c.heads, 4u);
  EXPECT_EQ(c.kv_heads, 2u);
  EXPECT_EQ(c.head_dim, 16u);
  EXPECT_EQ(c.intermediate, 96u);
  EXPECT_EQ(c.vocab, 3u);
  EXPECT_EQ(c.max_positions, 512u);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(c.rope_pairs, model::RopePairs::interleaved);
  EXPECT_EQ(c.bos_token, 1);
  EXPECT_NEAR(c.rope_inverse_frequencies[1], 1 / std::pow(500000.0, 2.0 / 16), 1e-7);
  f.tensors.push_back({"output.weight", {64, 3}, formats::GgmlType::f16, {}});
  f.metadata["llama.rope.scaling.type"] = "yarn";
  f.metadata["llama.rope.scaling.factor"] = 4.0;
  f.metadata["llama.rope.scaling.original_context_length"] = 128;
  c = model::gguf_model_config(f, "m.gguf");
  EXPECT_FALSE(c.tied_embeddings);
  EXPECT_NEAR(c.rope_attention_factor, 0.1 * std::log(4.0) + 1, 1e-12);
  // Llama 3.1's RoPE as llama.cpp's converter writes it (rope_freqs.weight:
  // each pair's divisor, from the llama3 rope_type's factor, low and high
  // frequency factors and original context) gives the frequencies
  // transformers' llama3 scaling gives for the same config.
  {
    formats::GgufFile llama31 = f;
    llama31.metadata.erase("llama.rope.scaling.type");
    const double factor = 8, low = 1, high = 4, original = 64, base = 500000.0;
    std::vector<float> divisors;
    for (uint32_t i = 0; i < 8; ++i) {
      const double frequency = 1 / std::pow(base, 2.0 * i / 16), wavelength = 2 * M_PI / frequency;
      if (wavelength < original / high) divisors.push_back(1.0f);
      else if (wavelength > original / low) divisors.push_back(float(factor));
      else {
        const double smooth = (original / wavelength - low) / (high - low);
        divisors.push_back(float(1 / ((1 - smooth) / factor + smooth)));
      }
    }
    llama31.tensors = {{"rope_freqs.weight", {8}, formats::GgmlType::f32, std::as_bytes(std::span(divisors))}};
    const model::ModelConfig from_gguf = model::gguf_model_config(llama31, "m.gguf");
    const model::ModelConfig from_hf = model::parse_hf_config(
        R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 3, "max_position_embeddings": 512,
            "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
            "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                             "original_max_position_embeddings": 64}})",
        "config.json");
    ASSERT_EQ(from_gguf.rope_inverse_frequencies.size(), from_hf.rope_inverse_frequencies.size());
    for (size_t i = 0; i < from_hf.rope_inverse_frequencies.size(); ++i)
      EXPECT_NEAR(from_gguf.rope_inverse_frequencies[i], from_hf.rope_inverse_frequencies[i],
                  1e-6 * from_hf.rope_inverse_frequencies[i]) << "pair " << i;
    std::vector<float> too_few(4, 1.0f);
    llama31.tensors = {{"rope_freqs.weight", {4}, formats::GgmlType::f32, std::as_bytes(std::span(too_few))}};
    EXPECT_THROW((void)model::gguf_model_config(llama31, "m.gguf"), InputError);
  }
  auto refused = [&](formats::GgufFile bad, const std::string& key) {
    try {
      (void)model::gguf_model_config(bad, "m.gguf");
      ADD_FAILURE() << "accepted without " << key;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  formats::GgufFile qwen = f;
  qwen.metadata["general.architecture"] = "qwen2";
  refused(qwen, "general.architecture");
  formats::GgufFile partial = f;
  partial.metadata["llama.rope.dimension_count"] = 8;
  refused(partial, "llama.rope.dimension_count");
  formats::GgufFile dynamic = f;
  dynamic.metadata["llama.rope.scaling.type"] = "dynamic";
  refused(dynamic, "llama.rope.scaling.type");
  formats::GgufFile llama3 = f;
  llama3.tensors.push_back({"rope_freqs.weight", {8}, formats::GgmlType::f32, {}});  // no data
  refused(llama3, "rope_freqs.weight");
  formats::GgufFile missing = f;
  missing.metadata.erase("llama.block_count");
  refused(missing, "llama.block_count");
}

}  // namespace
}  // namespace kv
