// The model runner (engine/model/): whole forward passes of small random
// Llama-family models, written as Hugging Face directories, and of the bundled
// llama2.c checkpoint, against the float64 reference (reference/model.h), on
// fresh random weights; the loaders' refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "base/error.h"
#include "base/half.h"
#include "formats/ggml_blocks.h"
#include "gguf_writer.h"
#include "io/capture.h"
#include "methods/table.h"
#include "model/checkpoint.h"
#include "model/files.h"
#include "model/model.h"
#include "model/needle.h"
#include "model/perplexity.h"
#include "model/prompts.h"
#include "model/random_weights.h"
#include "model/tokenizer.h"
#include "random_capture.h"
#include "reference/model.h"
#include "temp_files.h"
#include "test_device.h"

namespace kv {
namespace {

struct TinyModel {
  std::string name;
  std::string architecture = "LlamaForCausalLM";
  DType dtype = DType::f16;
  uint32_t hidden = 64, layers = 2, heads = 4, kv_heads = 2, head_dim = 16, intermediate = 96, vocab = 101;
  bool tied = true;
  std::string rope = R"({"rope_theta": 10000.0, "rope_type": "default"})";
};

// A Hugging Face directory of random weights (seeded; the seed is in the
// directory's name, which a failure prints).
std::filesystem::path write_tiny_model(const TinyModel& m, uint32_t seed) {
  const std::filesystem::path dir = test::temp_path(m.name + "_seed" + std::to_string(seed));
  std::filesystem::create_directories(dir);
  nlohmann::json config = {{"architectures", {m.architecture}},
                           {"hidden_size", m.hidden},
                           {"num_hidden_layers", m.layers},
                           {"num_attention_heads", m.heads},
                           {"num_key_value_heads", m.kv_heads},
                           {"head_dim", m.head_dim},
                           {"intermediate_size", m.intermediate},
                           {"vocab_size", m.vocab},
                           {"max_position_embeddings", 512},
                           {"rms_norm_eps", 1e-5},
                           {"hidden_act", "silu"},
                           {"tie_word_embeddings", m.tied},
                           {"bos_token_id", 1},
                           {"eos_token_id", 2},
                           {"rope_parameters", nlohmann::json::parse(m.rope)}};
  std::ofstream(dir / "config.json") << config.dump(2);
  std::mt19937 rng(seed);
  std::vector<std::vector<std::byte>> storage;
  std::vector<TensorToWrite> tensors;
  auto add = [&](const std::string& name, std::vector<uint64_t> shape, float scale, float offset = 0.0f) {
    uint64_t count = 1;
    for (uint64_t s : shape) count *= s;
    std::normal_distribution<float> normal(offset, scale);
    std::vector<float> values(count);
    for (float& v : values) v = normal(rng);
    storage.push_back(from_float(m.dtype, values));
    tensors.push_back({name, m.dtype, shape, storage.back()});
  };
  const uint64_t q_dim = uint64_t(m.heads) * m.head_dim, kv_dim = uint64_t(m.kv_heads) * m.head_dim;
  add("model.embed_tokens.weight", {m.vocab, m.hidden}, 1.0f);
  add("model.norm.weight", {m.hidden}, 0.1f, 1.0f);
  if (!m.tied) add("lm_head.weight", {m.vocab, m.hidden}, 0.2f);
  for (uint32_t l = 0; l < m.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {m.hidden}, 0.1f, 1.0f);
    add(p + "self_attn.q_proj.weight", {q_dim, m.hidden}, 0.3f);
    add(p + "self_attn.k_proj.weight", {kv_dim, m.hidden}, 0.3f);
    add(p + "self_attn.v_proj.weight", {kv_dim, m.hidden}, 0.2f);
    add(p + "self_attn.o_proj.weight", {m.hidden, q_dim}, 0.2f);
    if (m.architecture == "Qwen3ForCausalLM") {
      add(p + "self_attn.q_norm.weight", {m.head_dim}, 0.1f, 1.0f);
      add(p + "self_attn.k_norm.weight", {m.head_dim}, 0.1f, 1.0f);
    }
    if (m.architecture == "Qwen2ForCausalLM") {
      add(p + "self_attn.q_proj.bias", {q_dim}, 0.2f);
      add(p + "self_attn.k_proj.bias", {kv_dim}, 0.2f);
      add(p + "self_attn.v_proj.bias", {kv_dim}, 0.2f);
    }
    add(p + "post_attention_layernorm.weight", {m.hidden}, 0.1f, 1.0f);
    add(p + "mlp.gate_proj.weight", {m.intermediate, m.hidden}, 0.2f);
    add(p + "mlp.up_proj.weight", {m.intermediate, m.hidden}, 0.2f);
    add(p + "mlp.down_proj.weight", {m.hidden, m.intermediate}, 0.2f);
  }
  write_safetensors(dir / "model.safetensors", tensors, {});
  return dir;
}

// Runs `tokens` as a prefill in chunks, then `steps` decode steps of the
// reference's greedy choices, and checks every logit of each step's last
// token against the reference, within `tolerance` of the largest logit.
void expect_matches_reference(const model::Checkpoint& checkpoint, std::vector<int32_t> tokens, uint32_t chunk,
                              uint32_t steps, double tolerance,
                              model::Model::LinearInputs inputs = model::Model::LinearInputs::fp32) {
  std::vector<int32_t> all = tokens;
  {  // the reference's own continuation, so that the GPU runs the same tokens
    std::vector<int32_t> grow = tokens;
    for (uint32_t s = 0; s < steps; ++s) {
      const auto logits = reference::model_logits(checkpoint, grow);
      const auto& last = logits.back();
      grow.push_back(int32_t(std::max_element(last.begin(), last.end()) - last.begin()));
    }
    all = grow;
  }
  const auto expected = reference::model_logits(checkpoint, all);
  // The GPU's float32 q, k and v and the float64 pass's round to stored values
  // a step apart now and then, and a badly conditioned position carries those
  // steps to the logits (bf16, seeds 1485672727 and 796045252: 1.06 and 1.27
  // times the bound at a position of llama_gqa_untied_bf16). The pass without
  // that rounding says how far it moves each position; twice that is allowed
  // besides the tolerance (as SelectionInTheLoopTest does).
  std::vector<Block> positions;
  for (uint32_t p = 0; p < all.size(); ++p) positions.push_back({Mode::decode, p, 1});
  const auto unrounded = reference::model_logits(checkpoint, all, positions, {}, false);
  auto bound = [&](uint32_t position) {
    double largest = 0, rounding = 0;
    for (size_t i = 0; i < expected[position].size(); ++i) {
      largest = std::max(largest, std::abs(expected[position][i]));
      rounding = std::max(rounding, std::abs(expected[position][i] - unrounded[position][i]));
    }
    return tolerance * largest + 2 * rounding;
  };
  model::Model runner(test::device(), checkpoint, uint32_t(all.size()), chunk, inputs);
  auto check = [&](uint32_t position) {
    const std::vector<float> got = runner.logits();
    const std::vector<double>& want = expected[position];
    ASSERT_EQ(got.size(), want.size());
    const double allowed = bound(position);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], allowed) << "position " << position << ", logit " << i;
  };
  runner.prefill(tokens, false, [&](uint32_t done) { check(done - 1); });
  for (uint32_t s = 0; s < steps; ++s) {
    const int32_t next = all[tokens.size() + s];
    // The same choice, unless the reference's top two are closer than the bound.
    std::vector<double> sorted = expected[tokens.size() + s - 1];
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
    if (sorted[0] - sorted[1] > 2 * bound(uint32_t(tokens.size() + s - 1))) {
      EXPECT_EQ(runner.greedy(), next) << "greedy choice after position " << tokens.size() + s - 1;
    }
    runner.append(std::span(&next, 1));
    check(uint32_t(tokens.size() + s));
  }
}

class TinyModelTest : public test::GpuTest, public ::testing::WithParamInterface<TinyModel> {};

TEST_P(TinyModelTest, LogitsMatchFloat64) {
  const uint32_t seed = test::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TinyModel& m = GetParam();
  const model::Checkpoint checkpoint = model::Checkpoint::open(write_tiny_model(m, seed));
  std::mt19937 rng(seed);
  std::vector<int32_t> tokens(37);
  for (int32_t& t : tokens) t = int32_t(rng() % m.vocab);
  // fp32 activations against float64: only the order of sums differs, but for
  // attention's probabilities, which the tensor-core chunk kernel rounds to fp16
  // (docs/methods.md, decision 12) where the storage type is.
  expect_matches_reference(checkpoint, tokens, 16, 4, m.dtype == DType::f32 ? 1e-4 : 4e-3);
  // The fast path where the device has tensor cores: each prefill linear
  // layer's inputs rounded to fp16 (2^-12 of each), which these random
  // models, whose layers amplify a change, carry to at most 1.7% of the
  // largest logit (H200, docs/model.md); decode steps stay fp32.
  if (test::device().info().cooperative_matrix && m.dtype != DType::f32)
    expect_matches_reference(checkpoint, tokens, 16, 4, 3e-2, model::Model::LinearInputs::fastest);
}

std::vector<TinyModel> tiny_models() {
  std::vector<TinyModel> models;
  TinyModel gqa{"llama_gqa_tied_f16"};
  models.push_back(gqa);
  TinyModel untied = gqa;
  untied.name = "llama_gqa_untied_bf16";
  untied.tied = false;
  untied.dtype = DType::bf16;
  models.push_back(untied);
  TinyModel mha = gqa;
  mha.name = "llama_mha_f32_llama3_rope";
  mha.kv_heads = 4;
  mha.dtype = DType::f32;
  mha.rope = R"({"rope_theta": 500000.0, "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                 "high_freq_factor": 4.0, "original_max_position_embeddings": 64})";
  models.push_back(mha);
  TinyModel qwen = gqa;
  qwen.name = "qwen2_biases_mqa";
  qwen.architecture = "Qwen2ForCausalLM";
  qwen.kv_heads = 1;
  qwen.head_dim = 32;
  qwen.hidden = 96;
  models.push_back(qwen);
  // YaRN-scaled RoPE (cos and sin scaled by its attention factor).
  TinyModel yarn = gqa;
  yarn.name = "llama_gqa_f16_yarn_rope";
  yarn.rope = R"({"rope_theta": 10000.0, "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16})";
  models.push_back(yarn);
  // Qwen3: q and k normed per head before RoPE; head_dim apart from hidden / heads.
  struct Qwen3Variant {
    const char* name;
    uint32_t kv_heads;
    bool tied;
    DType dtype;
  };
  for (const Qwen3Variant& v : {Qwen3Variant{"qwen3_gqa_untied_bf16", 2, false, DType::bf16},
                                Qwen3Variant{"qwen3_mha_tied_f32", 4, true, DType::f32},
                                Qwen3Variant{"qwen3_gqa_tied_f16", 2, true, DType::f16}}) {
    TinyModel qwen3 = gqa;
    qwen3.name = v.name;
    qwen3.architecture = "Qwen3ForCausalLM";
    qwen3.head_dim = 32;
    qwen3.kv_heads = v.kv_heads;
    qwen3.tied = v.tied;
    qwen3.dtype = v.dtype;
    models.push_back(qwen3);
  }
  return models;
}

INSTANTIATE_TEST_SUITE_P(Models, TinyModelTest, ::testing::ValuesIn(tiny_models()),
                         [](const ::testing::TestParamInfo<TinyModel>& info) { return info.param.name; });

// A tiny model's weights as llama.cpp's converter writes them to GGUF: the
// llama.* keys, tensors renamed with their dimensions reversed, and q's and
// k's rows of each head permuted so that RoPE pairs neighbouring channels.
// Rows of fp16 values as Q8_0 (32 int8 and an fp16 scale a block) or Q4_0 (32
// nibbles, value q - 8, and a scale): a plain round-to-nearest encoder, not
// ggml's, which only has to give blocks of the layout.
std::vector<std::byte> quantized_blocks(formats::GgmlType type, std::span<const std::byte> f16) {
  std::vector<float> x(f16.size() / 2);
  for (size_t i = 0; i < x.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, f16.data() + 2 * i, 2);
    x[i] = half_to_float(h);
  }
  const bool q8 = type == formats::GgmlType::q8_0;
  std::vector<std::byte> out;
  for (size_t b = 0; b < x.size(); b += 32) {
    float amax = 0;
    for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::abs(x[i]));
    const uint16_t d = float_to_half(amax / (q8 ? 127.0f : 7.0f));
    const float inverse = half_to_float(d) > 0 ? 1.0f / half_to_float(d) : 0.0f;
    out.push_back(std::byte(d & 0xff));
    out.push_back(std::byte(d >> 8));
    if (q8) {
      for (size_t i = b; i < b + 32; ++i) out.push_back(std::byte(uint8_t(int8_t(std::lround(std::clamp(x[i] * inverse, -127.0f, 127.0f))))));
    } else {
      for (size_t j = 0; j < 16; ++j) {
        const auto nibble = [&](size_t i) { return uint8_t(std::lround(std::clamp(x[i] * inverse, -8.0f, 7.0f)) + 8); };
        out.push_back(std::byte(uint8_t(nibble(b + j) | (nibble(b + j + 16) << 4))));
      }
    }
  }
  return out;
}

// With `quantized`, every fp16 matrix goes in as Q8_0 but the MLP's down
// projections, in Q4_0: a file of mixed types, as llama.cpp's quantizer writes.
std::filesystem::path write_as_gguf(const model::Checkpoint& c, const std::string& name, bool quantized = false) {
  const model::ModelConfig& m = c.config();
  test::GgufWriter w;
  w.out = {std::byte{'G'}, std::byte{'G'}, std::byte{'U'}, std::byte{'F'}};
  w.put<uint32_t>(3);
  struct Tensor {
    std::string name;
    const model::Weight* weight;
    uint32_t heads;  // q and k: rows permuted per head; 0 otherwise
  };
  std::vector<Tensor> tensors = {{"token_embd.weight", &c.embedding(), 0}, {"output_norm.weight", &c.final_norm(), 0}};
  if (!c.tied()) tensors.push_back({"output.weight", &c.lm_head(), 0});
  for (uint32_t l = 0; l < m.layers; ++l) {
    const model::LayerWeights& lw = c.layers()[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    for (const auto& [suffix, weight, heads] :
         {std::tuple{"attn_norm.weight", &lw.attention_norm, 0u}, {"attn_q.weight", &lw.wq, m.heads},
          {"attn_k.weight", &lw.wk, m.kv_heads}, {"attn_v.weight", &lw.wv, 0u}, {"attn_output.weight", &lw.wo, 0u},
          {"ffn_norm.weight", &lw.mlp_norm, 0u}, {"ffn_gate.weight", &lw.w_gate, 0u}, {"ffn_up.weight", &lw.w_up, 0u},
          {"ffn_down.weight", &lw.w_down, 0u}})
      tensors.push_back({p + suffix, weight, heads});
  }
  w.put<uint64_t>(tensors.size());
  w.put<uint64_t>(11);
  w.key("general.architecture", 8);
  w.text("llama");
  for (const auto& [key, value] : {std::pair{"llama.embedding_length", m.hidden}, {"llama.block_count", m.layers},
                                   {"llama.attention.head_count", m.heads}, {"llama.attention.head_count_kv", m.kv_heads},
                                   {"llama.attention.key_length", m.head_dim}, {"llama.feed_forward_length", m.intermediate},
                                   {"llama.context_length", m.max_positions}, {"llama.vocab_size", m.vocab}}) {
    w.key(key, 4);
    w.put<uint32_t>(value);
  }
  w.key("llama.attention.layer_norm_rms_epsilon", 6);
  w.put<float>(float(m.rms_eps));
  w.key("llama.rope.freq_base", 6);
  w.put<float>(10000.0f);
  uint64_t offset = 0;
  std::vector<std::vector<std::byte>> data;
  for (const Tensor& t : tensors) {
    const model::Weight& weight = *t.weight;
    std::vector<std::byte> bytes(weight.data.begin(), weight.data.end());
    if (t.heads) {  // row h d + j d/2 + i of a head goes to h d + 2 i + j
      const size_t row = bytes.size() / weight.shape[0], d = m.head_dim;
      for (uint64_t r = 0; r < weight.shape[0]; ++r) {
        const uint64_t h = r / d, j = (r % d) / (d / 2), i = r % (d / 2);
        std::copy_n(weight.data.begin() + long(r * row), row, bytes.begin() + long((h * d + 2 * i + j) * row));
      }
    }
    uint32_t type = weight.dtype == DType::f32 ? 0u : weight.dtype == DType::f16 ? 1u : 30u;
    if (quantized && weight.dtype == DType::f16 && weight.shape.size() == 2 && weight.shape[1] % 32 == 0) {
      const auto block_type = t.name.ends_with("ffn_down.weight") ? formats::GgmlType::q4_0 : formats::GgmlType::q8_0;
      bytes = quantized_blocks(block_type, bytes);
      type = uint32_t(block_type);
    }
    w.text(t.name);
    w.put<uint32_t>(uint32_t(weight.shape.size()));
    for (auto d = weight.shape.rbegin(); d != weight.shape.rend(); ++d) w.put<uint64_t>(*d);
    w.put<uint32_t>(type);
    w.put<uint64_t>(offset);
    offset += (bytes.size() + 31) / 32 * 32;
    data.push_back(std::move(bytes));
  }
  w.pad(32);
  for (const std::vector<std::byte>& bytes : data) {
    w.out.insert(w.out.end(), bytes.begin(), bytes.end());
    w.pad(32);
  }
  const std::filesystem::path path = test::temp_path(name + ".gguf");
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(w.out.data()), std::streamsize(w.out.size()));
  return path;
}

// The same model from safetensors and from GGUF: float64 logits equal (the
// permuted rows with neighbouring RoPE pairs are the same arithmetic), and the
// GPU holds the GGUF one to float64.
TEST(GgufModel, GivesTheSafetensorsModelsLogits) {
  const uint32_t seed = test::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (DType dtype : {DType::f16, DType::bf16}) {
    TinyModel m{"gguf_twin"};
    m.dtype = dtype;
    m.tied = dtype == DType::f16;
    const model::Checkpoint original = model::Checkpoint::open(write_tiny_model(m, seed));
    const model::Checkpoint gguf = model::Checkpoint::open(write_as_gguf(original, std::string("gguf_twin_") + dtype_name(dtype)));
    EXPECT_EQ(gguf.config().rope_pairs, model::RopePairs::interleaved);
    EXPECT_EQ(gguf.tied(), m.tied);
    std::mt19937 rng(seed);
    std::vector<int32_t> tokens(23);
    for (int32_t& t : tokens) t = int32_t(rng() % m.vocab);
    const auto want = reference::model_logits(original, tokens), got = reference::model_logits(gguf, tokens);
    for (size_t p = 0; p < want.size(); ++p)
      for (size_t i = 0; i < want[p].size(); ++i) ASSERT_NEAR(got[p][i], want[p][i], 1e-9 * (1 + std::abs(want[p][i])));
    expect_matches_reference(gguf, tokens, 8, 2, 4e-3);
  }
}

// A GGUF file of block-quantized matrices (Q8_0 and Q4_0 mixed) keeps them
// as blocks (each value within half its block's step of the fp16 weight it
// was made from), q and k rows where RoPE wants them, and the GPU holds it to
// float64 over the blocks' values. (How far the logits move with 4-bit random
// weights depends on the draw: not a property to hold.)
TEST(GgufModel, ReadsBlockQuantizedMatricesAsBlocks) {
  const uint32_t seed = test::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  TinyModel m{"gguf_quantized"};
  const model::Checkpoint original = model::Checkpoint::open(write_tiny_model(m, seed));
  const model::Checkpoint plain = model::Checkpoint::open(write_as_gguf(original, "gguf_plain"));
  const model::Checkpoint quantized = model::Checkpoint::open(write_as_gguf(original, "gguf_quantized", true));
  const model::LayerWeights &want = plain.layers()[1], &got = quantized.layers()[1];
  for (const auto& [a, b] : {std::pair{&want.wq, &got.wq}, {&want.w_down, &got.w_down}, {&want.wo, &got.wo}}) {
    SCOPED_TRACE(b->name);
    // Each value within half a step of its block's scale (Q8_0: amax / 127, Q4_0: amax / 7).
    const bool four_bits = b->name.ends_with("ffn_down.weight");
    ASSERT_EQ(b->blocks, four_bits ? formats::GgmlType::q4_0 : formats::GgmlType::q8_0);
    ASSERT_EQ(b->dtype, DType::f16);
    ASSERT_EQ(b->shape, a->shape);
    ASSERT_EQ(b->data.size(), a->count() / 32 * (four_bits ? 18 : 34));
    const std::vector<float> x_all = model::to_floats(*a), y_all = model::to_floats(*b);
    for (size_t block = 0; block < x_all.size() / 32; ++block) {
      float amax = 0;
      for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::abs(x_all[block * 32 + i]));
      const float step = amax / (four_bits ? 7.0f : 127.0f);
      for (size_t i = 0; i < 32; ++i)
        ASSERT_NEAR(y_all[block * 32 + i], x_all[block * 32 + i], 0.5f * step * 1.01f + 1e-3f * std::abs(x_all[block * 32 + i]))
            << "block " << block;
    }
  }
  std::mt19937 rng(seed);
  std::vector<int32_t> tokens(23);
  for (int32_t& t : tokens) t = int32_t(rng() % m.vocab);
  const auto fp16 = reference::model_logits(plain, tokens), blocks = reference::model_logits(quantized, tokens);
  EXPECT_NE(blocks, fp16);  // the blocks' values, not the fp16 weights read through another door
  expect_matches_reference(quantized, tokens, 8, 2, 4e-3);
}

class ModelRunTest : public test::GpuTest {};

// stories260K (assets/models/stories260K): head size 8, GQA 2:1, fp32, RoPE on neighbouring channels.
TEST_F(ModelRunTest, Stories260kMatchesFloat64) {
  const model::Checkpoint checkpoint = model::Checkpoint::open(KVSCOPE_ASSETS "/models/stories260K/stories260K.bin");
  EXPECT_EQ(checkpoint.config().head_dim, 8u);
  EXPECT_EQ(checkpoint.config().kv_heads, 4u);
  const std::vector<int32_t> tokens{1, 403, 407, 261, 378, 271, 267, 284, 414, 265, 285, 261, 308, 376};
  expect_matches_reference(checkpoint, tokens, 8, 6, 1e-4);
}

// Greedy tokens after `prompt` (BOS first where the model has one), until
// `steps` or the model's end token; the text the tokenizer decodes.
std::string generate(const model::Checkpoint& checkpoint, const model::Tokenizer& tokenizer, const std::string& prompt,
                     uint32_t steps) {
  const model::ModelConfig& c = checkpoint.config();
  std::vector<int32_t> tokens;
  if (c.bos_token >= 0) tokens.push_back(c.bos_token);
  for (int32_t t : tokenizer.encode(prompt)) tokens.push_back(t);
  model::Model runner(test::device(), checkpoint, uint32_t(tokens.size() + steps));
  runner.prefill(tokens);
  std::string text;
  int32_t previous = tokens.back();
  auto show = [&](int32_t next) {
    if (std::find(c.eos_tokens.begin(), c.eos_tokens.end(), next) != c.eos_tokens.end()) return false;
    text += tokenizer.decode(previous, next);
    previous = next;
    return true;
  };
  const int32_t first = runner.greedy();
  if (steps > 0 && show(first) && steps > 1) runner.append_greedy(first, steps - 1, show);
  return text;
}

// llama2.c's own test (test_all.py, test_runc): `run stories260K.bin -z
// tok512.bin -t 0.0 -n 200` prints this (then a newline). run.c's -n counts
// positions from the BOS, each choosing one new token: 200 tokens.
TEST_F(ModelRunTest, Stories260kGreedyTextIsRunC) {
  const model::Checkpoint checkpoint = model::Checkpoint::open(KVSCOPE_ASSETS "/models/stories260K/stories260K.bin");
  const auto tokenizer = model::open_tokenizer(KVSCOPE_ASSETS "/models/stories260K/tok512.bin", checkpoint.config().vocab);
  const std::string expected =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a "
      "big, red ball. She wanted to play with it, but it was too high.\nLily's mom said, \"Lily, let's go to the "
      "park.\" Lily was sad and didn't know what to do. She said, \"I want to play with your ball, but I can't find "
      "it.\"\nLily was sad and didn't know what to do. She said, \"I'm sorry, Lily. I didn't know what to do.\"\nLily "
      "didn't want to help her mom, so she";
  EXPECT_EQ(generate(checkpoint, *tokenizer, "", 200), expected);
}

// llama-debian-5m (assets/models/llama-debian-5m) finds a passkey in a 1k-token
// prompt with dense attention, as its model card says, and loses it with
// StreamingLLM keeping 64 keys in every decode step: the needle at depth 0.5
// is outside its window, so a method that is not really in the loop fails
// this. kvscope needle's own run: one dense prefill serves both.
TEST_F(ModelRunTest, LlamaDebian5mNeedleDenseFindsA1kPasskeyStreaming64DoesNot) {
  const model::Checkpoint checkpoint = model::Checkpoint::open(KVSCOPE_ASSETS "/models/llama-debian-5m");
  const auto tokenizer = model::open_tokenizer(KVSCOPE_ASSETS "/models/llama-debian-5m", checkpoint.config().vocab);
  model::NeedleConfig config;
  config.prompts.lengths = {1024};  // the needle 500 tokens before the question: far outside 64 keys
  config.prompts.depths = {0.5};
  config.prompts.seed = test::test_seed();
  config.sweep.methods = {"dense", "streaming"};
  config.sweep.budgets = {64};
  SCOPED_TRACE("seed " + std::to_string(config.prompts.seed));
  const std::vector<model::NeedleResult> results = model::run_needle(test::device(), checkpoint, *tokenizer, config);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].method, "dense");
  EXPECT_EQ(results[0].accuracy(), 1.0) << "dense said '" << results[0].answers[0] << "'";
  EXPECT_EQ(results[1].method, "streaming");
  EXPECT_EQ(results[1].accuracy(), 0.0) << "streaming said '" << results[1].answers[0] << "'";
}

// llama-debian-5m quantized at load, as llama.cpp's quantizer would (Q8_0;
// Q4_K_M, whose 704-wide down projections take Q5_0 and Q8_0 for Q4_K and
// Q6_K): its perplexity on the bundled licence text stays within a margin of
// the fp16 model's (at 600 tokens, the last 64 scored, kvscope ppl measured
// 40.85 fp16, 40.94 Q8_0, +0.2 %; 41.39 Q4_K_M, +1.3 %; at 320 tokens, the
// last 32 scored, as here: 23.54, 23.41, -0.6 %; 24.16, +2.6 %), and
// dense still finds a passkey 250 tokens back in Q4_K_M. (Named for the long
// cases: a run, not in the sanitized copy.)
TEST_F(ModelRunTest, LlamaDebian5mQuantizedKeepsItsPerplexityAndPasskey) {
  const std::string path = KVSCOPE_ASSETS "/models/llama-debian-5m";
  const model::Checkpoint fp16 = model::Checkpoint::open(path);
  const auto tokenizer = model::open_tokenizer(path, fp16.config().vocab);
  const std::vector<int32_t> tokens = model::perplexity_tokens(
      *tokenizer, fp16.config(), model::read_text_file(KVSCOPE_ASSETS "/text/licenses.txt"), 320, "licenses.txt");
  model::PerplexityConfig ppl;
  ppl.scored = 32;
  ppl.sweep.methods = {"dense"};
  ppl.sweep.regime = model::Regime::prefill;
  auto perplexity = [&](const model::Checkpoint& checkpoint) {
    const std::vector<model::PerplexityResult> results = model::run_perplexity(test::device(), checkpoint, tokens, ppl);
    return results.back().perplexity();
  };
  const double reference = perplexity(fp16);
  const uint32_t seed = test::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (const auto& [name, margin] : {std::pair{"q8_0", 0.01}, {"q4_k_m", 0.04}}) {
    SCOPED_TRACE(name);
    model::Checkpoint checkpoint = model::Checkpoint::open(path);
    checkpoint.quantize(*model::parse_weight_type(name));
    const double got = perplexity(checkpoint);
    EXPECT_LT(std::abs(got / reference - 1), margin) << "perplexity " << got << " against fp16's " << reference;
    if (std::string(name) != "q4_k_m") continue;
    model::NeedleConfig config;
    config.prompts.lengths = {512};
    config.prompts.depths = {0.5};
    config.prompts.seed = seed;
    config.sweep.methods = {"dense"};
    const std::vector<model::NeedleResult> results = model::run_needle(test::device(), checkpoint, *tokenizer, config);
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].accuracy(), 1.0) << "dense said '" << results[0].answers[0] << "'";
  }
}

// What kvscope capture writes: the queries the runner keeps and its KV cache,
// against the reference's rotated, rounded q, k and v.
TEST_F(ModelRunTest, KeptQueriesAndCacheMatchFloat64) {
  const uint32_t seed = test::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  TinyModel m{"capture_gqa_bf16"};
  m.dtype = DType::bf16;
  const model::Checkpoint checkpoint = model::Checkpoint::open(write_tiny_model(m, seed));
  std::mt19937 rng(seed);
  std::vector<int32_t> tokens(45);
  for (int32_t& t : tokens) t = int32_t(rng() % m.vocab);
  model::Model runner(test::device(), checkpoint, uint32_t(tokens.size()), 16, model::Model::LinearInputs::fp32);
  runner.keep_queries(1);
  runner.prefill(tokens);
  const reference::LayerQkv expected = reference::model_qkv(checkpoint, tokens, 1);
  auto compare = [&](const vk::Buffer& buffer, const std::vector<double>& want, const char* what) {
    std::vector<std::byte> bytes(want.size() * 2);
    buffer.download(bytes);
    const std::vector<float> got = to_float(DType::bf16, bytes);
    // The GPU stores layer 0's keys and values, and these, in bf16 (8 bits),
    // which the float64 pass does not round: those roundings reach every
    // value of a row by the row's scale, not the value's own size, so a small
    // value can be several bf16 steps off. Over 21 seeds the worst value was
    // 0.0041 of the tensor's largest (about one bf16 step there); two steps
    // (2^-7) hold every one. A wrong head, position or channel is off by the
    // scale itself.
    double largest = 0, worst = 0;
    size_t worst_at = 0;
    for (double v : want) largest = std::max(largest, std::abs(v));
    for (size_t i = 0; i < want.size(); ++i)
      if (std::abs(got[i] - want[i]) > worst) worst = std::abs(got[i] - want[i]), worst_at = i;
    EXPECT_LE(worst, std::ldexp(largest, -7)) << what << ": value " << worst_at << " is " << got[worst_at]
                                              << ", float64 " << want[worst_at] << " (largest " << largest << ")";
  };
  compare(runner.kept_queries(1), expected.q, "q");
  compare(runner.cache(1).keys, expected.k, "k");
  compare(runner.cache(1).values, expected.v, "v");
}

// A selection method inside the model's attention: the model's logits, over
// prefill chunks and decode steps, against the float64 forward pass whose
// attention in each block and layer keeps the keys that the method's float64
// reference (reference/selection.h) selects there, from that layer's q and k
// so far as the GPU stored them (fp16, so Quest's and Fier's page and block
// bounds are stored keys, exact on both sides). A method that selects from
// stale metadata, or a selection that differs, changes the logits.
struct LoopCase {
  std::string name;
  model::SelectionPlan plan;
};

std::vector<LoopCase> loop_cases() {
  std::vector<LoopCase> cases;
  auto add = [&](std::string name, std::string decode, uint32_t decode_budget, std::string prefill, uint32_t prefill_budget,
                 std::vector<uint32_t> dense_layers = {}) {
    model::SelectionPlan plan;
    plan.decode_method = decode;
    plan.decode_budget = decode_budget;
    plan.prefill_method = prefill;
    plan.prefill_budget = prefill_budget;
    plan.dense_layers = dense_layers;
    plan.options.page_size = 8;
    plan.options.group_size = 16;
    plan.options.n_q = 4;
    plan.options.lim_start = 1;  // of three layers: 0 dense, 1 chooses, 2 reuses its set
    cases.push_back({name, plan});
  };
  add("quest_decode", "quest", 24, "", 0);
  add("fier_decode", "fier", 16, "", 0);
  add("streaming_decode", "streaming", 12, "", 0);
  add("quoka_prefill", "", 0, "quoka", 12);
  add("quest_both_layer0_dense", "quest", 16, "quest", 16, {0});
  add("lessismore_both", "lessismore", 12, "lessismore", 12);
  return cases;
}

class SelectionInTheLoopTest : public test::GpuTest, public ::testing::WithParamInterface<LoopCase> {};

TEST_P(SelectionInTheLoopTest, LogitsMatchFloat64WithTheReferenceSelection) {
  const model::SelectionPlan& plan = GetParam().plan;
  TinyModel m{"loop_" + GetParam().name};
  m.head_dim = 32;  // Fier packs 32 channels a word
  m.layers = 3;
  const uint32_t prompt = 40, steps = 12, chunk = 8;
  std::vector<Block> blocks = prefill_blocks(prompt, chunk);
  for (uint32_t p = prompt; p < prompt + steps; ++p) blocks.push_back({Mode::decode, p, 1});
  // A cut between two scores closer than float32 rounding may go either way
  // on the GPU: such a draw is not compared, and the next seed is. Fier's
  // 1-bit keys make exact ties common (about 4 draws in 10 of fier_decode
  // have one), so up to 30 draws: ten in a row did happen.
  auto near_tie = [&](const reference::HostLayer& layer, const std::string& method, const Block& b, uint32_t budget) {
    std::vector<double> gaps;
    if (method == "quest") gaps = reference::quest_decision_gaps(layer, plan.options, b, budget);
    if (method == "quoka") gaps = reference::quoka_decision_gaps(layer, plan.options, b, budget);
    if (method == "fier")
      for (std::vector<double> row : reference::fier_scores(layer, plan.options, b)) {
        std::sort(row.begin(), row.end(), std::greater<>());
        double largest = 0;
        for (double v : row) largest = std::max(largest, std::abs(v));
        if (budget < row.size()) gaps.push_back((row[budget - 1] - row[budget]) / largest);
      }
    return std::any_of(gaps.begin(), gaps.end(), [](double g) { return g < 1e-4; });
  };
  const uint32_t first_seed = test::test_seed();
  for (uint32_t draw = 0; draw < 30; ++draw) {
    const uint32_t seed = first_seed + draw;
    SCOPED_TRACE("seed " + std::to_string(seed));
    const model::Checkpoint checkpoint = model::Checkpoint::open(write_tiny_model(m, seed));
    std::mt19937 rng(seed);
    std::vector<int32_t> tokens(prompt + steps);
    for (int32_t& t : tokens) t = int32_t(rng() % m.vocab);

    // The GPU's run first: the logits at each chunk's end and each decode
    // step, then the same after a rewind (at a chunk's start, so that the
    // chunks are the reference's), the metadata following the rewritten keys.
    model::Model runner(test::device(), checkpoint, prompt + steps, chunk, model::Model::LinearInputs::fp32);
    for (uint32_t l = 0; l < m.layers; ++l) runner.keep_queries(l);
    runner.select(plan);
    std::vector<std::pair<uint32_t, std::vector<float>>> got;
    runner.prefill(std::span(tokens).first(prompt), false, [&](uint32_t done) { got.emplace_back(done - 1, runner.logits()); });
    auto decode = [&] {
      for (uint32_t p = prompt; p < prompt + steps; ++p) {
        runner.append(std::span(tokens).subspan(p, 1));
        got.emplace_back(p, runner.logits());
      }
    };
    decode();
    runner.rewind(3 * chunk);
    runner.prefill(std::span(tokens).subspan(3 * chunk, prompt - 3 * chunk));
    got.emplace_back(prompt - 1, runner.logits());
    decode();
    // The q and k the GPU stored, which its methods selected from: the
    // reference selects from them too, since a stored value one rounding step
    // from the float64 pass's can flip what a method decides (a Fier bit at
    // its block's midpoint) without any score near the cut.
    std::vector<std::vector<float>> gpu_q, gpu_k;
    for (uint32_t l = 0; l < m.layers; ++l) {
      std::vector<std::byte> q(runner.kept_queries(l).bytes()), k(runner.cache(l).keys.bytes());
      runner.kept_queries(l).download(q);
      runner.cache(l).keys.download(k);
      gpu_q.push_back(to_float(DType::f16, q));
      gpu_k.push_back(to_float(DType::f16, k));
    }
    auto as_gpu_stored = [&](uint32_t layer, const reference::HostLayer& so_far) {
      reference::HostLayer h = so_far;
      const AttentionShape& s = so_far.shape;
      for (uint32_t head = 0; head < s.heads; ++head)
        for (uint32_t p = 0; p < s.tokens; ++p)
          for (uint32_t i = 0; i < s.dim; ++i)
            h.q[(size_t(head) * s.tokens + p) * s.dim + i] = gpu_q[layer][(size_t(head) * (prompt + steps) + p) * s.dim + i];
      for (uint32_t g = 0; g < s.kv_heads; ++g)
        for (uint32_t p = 0; p < s.tokens; ++p)
          for (uint32_t i = 0; i < s.dim; ++i)
            h.k[(size_t(g) * s.tokens + p) * s.dim + i] = gpu_k[layer][(size_t(g) * (prompt + steps) + p) * s.dim + i];
      return h;
    };

    bool ambiguous = false;
    uint32_t narrowed = 0;
    reference::Selection chosen;  // LessIsMore: the set the last choosing layer picked
    const reference::AttendRule rule = [&](uint32_t layer, const reference::HostLayer& so_far,
                                           const Block& b) -> std::optional<reference::Selection> {
      const bool decode = b.mode == Mode::decode;
      const std::string& method = decode ? plan.decode_method : plan.prefill_method;
      const uint32_t budget = decode ? plan.decode_budget : plan.prefill_budget;
      const LayerRole role = method.empty() ? LayerRole::own : layer_role(find_method(method), layer, plan.options);
      const bool dense_layer = std::count(plan.dense_layers.begin(), plan.dense_layers.end(), layer) > 0 && role != LayerRole::select;
      if (method.empty() || dense_layer || role == LayerRole::dense || budget >= b.candidates()) return std::nullopt;
      if (role == LayerRole::reuse) {
        ++narrowed;
        return chosen;
      }
      const reference::HostLayer stored = as_gpu_stored(layer, so_far);
      ambiguous = ambiguous || near_tie(stored, method, b, budget);
      const reference::Selection rows = reference::select(method, plan.options, stored, b, budget);
      const uint32_t per_row = find_method(method).granularity(plan.options, b.mode) == Granularity::kv_head ? so_far.shape.group() : 1;
      reference::Selection by_head;
      for (uint32_t h = 0; h < so_far.shape.heads; ++h) by_head.push_back(rows[h / per_row]);
      if (role == LayerRole::select) {  // it attends densely; the layers after it attend its set
        chosen = by_head;
        return std::nullopt;
      }
      ++narrowed;
      return by_head;
    };
    const auto expected = reference::model_logits(checkpoint, tokens, blocks, rule);
    if (ambiguous) continue;
    EXPECT_GT(narrowed, 0u) << "no block was narrowed: the case tests nothing";
    // The GPU rounds its float32 q, k and v to fp16 where the float64 pass
    // rounds its own, so some stored values are a step apart, and at a badly
    // conditioned position those steps reach the logits: at seed 4144480464
    // quest_both_layer0_dense's position 42 was 0.43% of the largest logit
    // off, dense attention alike (its layer-1 q two steps off). The same
    // pass without the rounding says how far rounding moves each position's
    // logits (0.1-0.5% here); twice that is allowed besides 4e-3. A selection
    // a page or a key off moved them by 18-59% in that draw.
    const auto unrounded = reference::model_logits(checkpoint, tokens, blocks, rule, false);
    for (const auto& [position, logits] : got) {
      const std::vector<double>& want = expected[position];
      double largest = 0, rounding = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        largest = std::max(largest, std::abs(want[i]));
        rounding = std::max(rounding, std::abs(want[i] - unrounded[position][i]));
      }
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(logits[i], want[i], 4e-3 * largest + 2 * rounding) << "position " << position << ", logit " << i;
    }
    return;
  }
  FAIL() << "30 draws in a row from seed " << first_seed << " had a selection decided within float32 rounding";
}

INSTANTIATE_TEST_SUITE_P(Methods, SelectionInTheLoopTest, ::testing::ValuesIn(loop_cases()),
                         [](const auto& info) { return info.param.name; });

// Plans that switch between methods, and through dense, reuse each method's
// objects (Model::select): each must bring its metadata up to the keys the
// others wrote meanwhile. Only the last layer selects, so every plan writes
// the same cache and the logits equal a run that never switched.
TEST_F(ModelRunTest, PlanSwitchesKeepEachMethodsMetadataCurrent) {
  TinyModel m{"plan_switches"};
  m.head_dim = 32;  // Fier packs 32 channels a word
  m.layers = 3;
  const uint32_t prompt = 40, between = 9, steps = 10, chunk = 8;
  const model::Checkpoint checkpoint = model::Checkpoint::open(write_tiny_model(m, test::test_seed()));
  std::mt19937 rng(test::test_seed());
  std::vector<int32_t> tokens(prompt + between + steps);
  for (int32_t& t : tokens) t = int32_t(rng() % m.vocab);
  auto plan = [&](std::string method, uint32_t budget) {
    model::SelectionPlan p{.decode_method = method, .decode_budget = budget, .dense_layers = {0, 1}};
    p.options.page_size = 8;
    return p;
  };
  const model::SelectionPlan quest = plan("quest", 24), fier = plan("fier", 16);
  auto decode = [](model::Model& runner, std::span<const int32_t> part) {
    std::vector<std::vector<float>> logits;
    for (const int32_t& t : part) {
      runner.append(std::span(&t, 1));
      logits.push_back(runner.logits());
    }
    return logits;
  };
  const std::span<const int32_t> all(tokens);
  model::Model switching(test::device(), checkpoint, uint32_t(tokens.size()), chunk);
  switching.select(quest);
  switching.prefill(all.first(prompt));
  decode(switching, all.subspan(prompt, 4));
  switching.select(fier);
  decode(switching, all.subspan(prompt + 4, 3));
  switching.select({});
  decode(switching, all.subspan(prompt + 7, between - 7));
  switching.select(quest);  // its pages last saw prompt + 4 keys
  const auto quest_after_switches = decode(switching, all.subspan(prompt + between, steps));
  switching.rewind(prompt);
  switching.select(fier);
  const auto fier_after_rewind = decode(switching, all.subspan(prompt, steps));

  model::Model only_quest(test::device(), checkpoint, uint32_t(tokens.size()), chunk);
  only_quest.select(quest);
  only_quest.prefill(all.first(prompt));
  decode(only_quest, all.subspan(prompt, between));
  EXPECT_EQ(quest_after_switches, decode(only_quest, all.subspan(prompt + between, steps)));
  model::Model only_fier(test::device(), checkpoint, uint32_t(tokens.size()), chunk);
  only_fier.select(fier);
  only_fier.prefill(all.first(prompt));
  EXPECT_EQ(fier_after_rewind, decode(only_fier, all.subspan(prompt, steps)));
}

// Greedy decoding with the choices kept on the GPU gives what append() and
// greedy() in a loop give: the same tokens, logits and stages, with a method
// in the loop; stopped early, the step past the stop is taken back (Quest's
// pages with it), so that decoding goes on as if it had never run.
TEST_F(ModelRunTest, AppendGreedyIsAppendAndGreedyInALoop) {
  TinyModel m{"append_greedy"};
  m.layers = 2;
  const uint32_t prompt = 30, steps = 12, stop_after = 5, chunk = 8;
  const model::Checkpoint checkpoint = model::Checkpoint::open(write_tiny_model(m, test::test_seed()));
  std::mt19937 rng(test::test_seed());
  std::vector<int32_t> tokens(prompt);
  for (int32_t& t : tokens) t = int32_t(rng() % m.vocab);
  model::SelectionPlan quest{.decode_method = "quest", .decode_budget = 16, .dense_layers = {0}};
  quest.options.page_size = 4;

  model::Model looped(test::device(), checkpoint, prompt + steps + 1, chunk);
  looped.select(quest);
  looped.prefill(tokens);
  const int32_t first = looped.greedy();
  std::vector<int32_t> choices;
  std::vector<std::vector<float>> logits;
  for (int32_t next = first; choices.size() < steps; next = choices.back()) {
    looped.append(std::span(&next, 1));
    choices.push_back(looped.greedy());
    logits.push_back(looped.logits());
  }

  model::Model on_gpu(test::device(), checkpoint, prompt + steps + 1, chunk);
  on_gpu.select(quest);
  on_gpu.prefill(tokens);
  EXPECT_EQ(on_gpu.append_greedy(first, steps), choices);
  EXPECT_EQ(on_gpu.length(), prompt + steps);
  EXPECT_EQ(on_gpu.greedy(), choices.back());
  EXPECT_EQ(on_gpu.logits(), logits.back());
  std::vector<std::string> looped_stages, gpu_stages;
  for (const vk::StageTime& t : looped.stage_times()) looped_stages.push_back(t.stage);
  for (const vk::StageTime& t : on_gpu.stage_times()) gpu_stages.push_back(t.stage);
  EXPECT_EQ(gpu_stages, looped_stages);

  on_gpu.rewind(prompt);
  uint32_t seen = 0;
  const std::vector<int32_t> stopped = on_gpu.append_greedy(first, steps, [&](int32_t) { return ++seen < stop_after; });
  EXPECT_EQ(stopped, std::vector<int32_t>(choices.begin(), choices.begin() + stop_after));
  EXPECT_EQ(on_gpu.length(), prompt + stop_after);
  EXPECT_EQ(on_gpu.greedy(), choices[stop_after - 1]);
  on_gpu.append(std::span(&choices[stop_after - 1], 1));
  EXPECT_EQ(on_gpu.logits(), logits[stop_after]);
  EXPECT_THROW(on_gpu.append_greedy(int32_t(m.vocab), 1), InputError);
  EXPECT_THROW(on_gpu.append_greedy(first, steps), InputError);  // past the run's positions
}

// GPU time is told by part where it is recorded, not by its stage's name:
// TOVA's scoring pass (its stage named attention_scores) and the dense pass
// that feeds it are selection; attention over its set is attention.
TEST_F(ModelRunTest, StagesCountTowardThePartThatRecordedThem) {
  if (test::device().timestamp_valid_bits() == 0) GTEST_SKIP() << "the device has no timestamps";
  TinyModel m{"stage_parts"};
  m.layers = 2;
  const model::Checkpoint checkpoint = model::Checkpoint::open(write_tiny_model(m, test::test_seed()));
  model::Model runner(test::device(), checkpoint, 40, 8);
  runner.select({.decode_method = "tova", .decode_budget = 8, .dense_layers = {0}});
  std::vector<int32_t> tokens(33);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t(i % m.vocab);
  runner.prefill(std::span(tokens).first(32));
  runner.append(std::span(tokens).subspan(32, 1));
  auto part_of = [&](const std::string& stage) {
    std::set<vk::Part> parts;
    for (const vk::StageTime& t : runner.stage_times())
      if (t.stage == stage) parts.insert(t.part);
    return parts;
  };
  EXPECT_EQ(part_of("attention_scores"), std::set<vk::Part>{vk::Part::selection});
  EXPECT_EQ(part_of("dense_lse_partial"), std::set<vk::Part>{vk::Part::selection});
  EXPECT_EQ(part_of("sparse_attention_partial"), std::set<vk::Part>{vk::Part::attention});
  EXPECT_EQ(part_of("attention_partial"), std::set<vk::Part>{vk::Part::attention});  // layer 0 and the prefill: dense
  EXPECT_EQ(part_of("qkv"), std::set<vk::Part>{vk::Part::model});
  double selection = 0;
  for (const vk::StageTime& t : runner.stage_times())
    if (t.part == vk::Part::selection) selection += t.milliseconds;
  EXPECT_DOUBLE_EQ(runner.ms_by_part().at("selection"), selection);
}

// A needle cell's JSON records the plan its runs had, whole (the prefill
// budget of a `both` run too), and reading the JSON back, as the viewer does
// before a re-run, gives that plan.
TEST_F(ModelRunTest, NeedleResultsRecordThePlanEachCellRan) {
  const model::Checkpoint checkpoint = model::Checkpoint::open(KVSCOPE_ASSETS "/models/llama-debian-5m");
  const auto tokenizer = model::open_tokenizer(KVSCOPE_ASSETS "/models/llama-debian-5m", checkpoint.config().vocab);
  model::NeedleConfig config;
  config.prompts.lengths = {256};
  config.prompts.depths = {0.5};
  config.sweep.methods = {"dense", "quest"};
  config.sweep.budgets = {48};
  config.sweep.regime = model::Regime::both;
  config.sweep.prefill_budget = 24;
  config.sweep.dense_layers = {1};
  config.sweep.options.page_size = 8;
  config.chunk = 32;
  const std::vector<model::NeedleResult> results = model::run_needle(test::device(), checkpoint, *tokenizer, config);
  ASSERT_EQ(results.size(), 2u);
  const model::SelectionPlan both{.decode_method = "quest", .decode_budget = 48, .prefill_method = "quest",
                                  .prefill_budget = 24, .options = config.sweep.options, .dense_layers = {1}};
  EXPECT_EQ(results[0].plan, model::SelectionPlan{});
  EXPECT_EQ(results[1].plan, both);
  const nlohmann::json written = nlohmann::json::parse(model::needle_json(config, results).dump());
  const std::vector<model::NeedleResult> read = model::needle_results_from_json(written);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].plan, model::SelectionPlan{});
  EXPECT_EQ(read[1].plan, both);
  EXPECT_EQ(written["results"][1]["regime"], "both");
}

// A model of random weights (Checkpoint::random, drawn on the device by
// model_random_fill.comp) runs exactly as the same values written to a
// safetensors file by the kernel's host twin: every matrix gets the key of its
// place, and the fill and upload paths hold the same bytes. Tied and untied.
TEST_F(ModelRunTest, RandomWeightsEqualTheirHostTwinOnDisk) {
  const uint32_t seed = test::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (bool tied : {true, false}) {
    TinyModel m{tied ? "random_tied" : "random_untied"};
    m.tied = tied;
    const std::filesystem::path config_dir = write_tiny_model(m, 1);
    const model::Checkpoint drawn = model::Checkpoint::random(config_dir / "config.json", seed);
    EXPECT_TRUE(drawn.random());
    EXPECT_THROW(reference::model_logits(drawn, std::vector<int32_t>{1, 2}), InputError);
    // Timed past its config's context: random weights mean nothing at any length.
    EXPECT_EQ(drawn.configured_positions(), 512u);  // write_tiny_model's max_position_embeddings
    EXPECT_EQ(drawn.config().max_positions, model::Checkpoint::kRandomWeightPositions);
    EXPECT_EQ(model::Checkpoint::open(config_dir).configured_positions(), 512u);

    // The same checkpoint written out: matrices from the host twin, by key index.
    std::vector<std::vector<std::byte>> storage;
    std::vector<TensorToWrite> tensors;
    auto matrix = [&](const model::Weight& w, uint32_t index) {
      storage.push_back(model::random_weight_bytes(w.dtype, model::random_weight_key(seed, index), w.count()));
      tensors.push_back({w.name, w.dtype, w.shape, storage.back()});
    };
    auto plain = [&](const model::Weight& w) { tensors.push_back({w.name, w.dtype, w.shape, w.data}); };
    storage.reserve(2 + 7 * m.layers);
    matrix(drawn.embedding(), 0);
    if (!tied) matrix(drawn.lm_head(), 1);
    plain(drawn.final_norm());
    for (uint32_t l = 0; l < m.layers; ++l) {
      const model::LayerWeights& w = drawn.layers()[l];
      const uint32_t first = 2 + 7 * l;
      plain(w.attention_norm);
      plain(w.mlp_norm);
      matrix(w.wq, first);
      matrix(w.wk, first + 1);
      matrix(w.wv, first + 2);
      matrix(w.wo, first + 3);
      matrix(w.w_gate, first + 4);
      matrix(w.w_up, first + 5);
      matrix(w.w_down, first + 6);
    }
    const std::filesystem::path twin_dir = test::temp_path(m.name + "_twin_seed" + std::to_string(seed));
    std::filesystem::create_directories(twin_dir);
    std::filesystem::copy_file(config_dir / "config.json", twin_dir / "config.json",
                               std::filesystem::copy_options::overwrite_existing);
    write_safetensors(twin_dir / "model.safetensors", tensors, {});
    const model::Checkpoint twin = model::Checkpoint::open(twin_dir);

    std::vector<int32_t> tokens(21);
    std::mt19937 rng(seed);
    for (int32_t& t : tokens) t = int32_t(rng() % m.vocab);
    auto run = [&](const model::Checkpoint& checkpoint) {
      model::Model runner(test::device(), checkpoint, uint32_t(tokens.size()), 8);
      runner.prefill(tokens, true);
      std::vector<float> logits = runner.logits();
      runner.rewind(0);
      return logits;
    };
    const std::vector<float> from_device = run(drawn), from_disk = run(twin);
    EXPECT_EQ(from_device, from_disk) << (tied ? "tied" : "untied");
    double spread = 0;
    for (float v : from_device) spread = std::max(spread, double(std::abs(v)));
    EXPECT_GT(spread, 0.0) << "the logits of random weights are all zero";
  }
}

// The shipped shapes (assets/shapes) are the real models': each config's
// parameter count, from the checkpoint Checkpoint::random builds of it
// (nothing is allocated on the device), is the published one.
TEST(ShippedShapes, HaveTheirModelsParameterCounts) {
  const std::vector<std::pair<std::string, uint64_t>> shapes = {
      {"llama-3-8b", 8030261248},  {"llama-3.1-8b", 8030261248}, {"llama-2-7b", 6738415616},
      {"longchat-7b-v1.5-32k", 6738415616}, {"mistral-7b", 7248023552}, {"qwen2.5-7b", 7615616512},
      {"llama-3.2-1b", 1235814400}, {"llama-3.2-3b", 3212749824}, {"qwen3-4b", 4022468096},
      {"qwen3-8b", 8190735360}};
  for (const auto& [name, parameters] : shapes) {
    const model::Checkpoint c = model::Checkpoint::random(KVSCOPE_ASSETS "/shapes/" + name + ".json", 0);
    uint64_t total = c.embedding().count() + c.final_norm().count() + (c.tied() ? 0 : c.lm_head().count());
    for (const model::LayerWeights& w : c.layers())
      for (const model::Weight* weight : {&w.attention_norm, &w.wq, &w.wk, &w.wv, &w.wo, &w.bq, &w.bk, &w.bv, &w.q_norm,
                                          &w.k_norm, &w.mlp_norm, &w.w_gate, &w.w_up, &w.w_down})
        total += weight->present() ? weight->count() : 0;
    EXPECT_EQ(total, parameters) << name;
  }
  // Past their contexts their checkpoints are refused; random weights, which
  // mean nothing at any length, are timed there all the same.
  const model::ModelConfig llama2 = model::read_hf_config(KVSCOPE_ASSETS "/shapes/llama-2-7b.json");
  EXPECT_THROW(model::check_sequence_length(llama2, 4097), InputError);
  EXPECT_NO_THROW(model::check_sequence_length(llama2, 4096));
  const model::Checkpoint llama3 = model::Checkpoint::random(KVSCOPE_ASSETS "/shapes/llama-3-8b.json", 0);
  EXPECT_EQ(llama3.configured_positions(), 8192u);
  EXPECT_NO_THROW(model::check_sequence_length(llama3.config(), 131072));
}

TEST_F(ModelRunTest, SelectionPlanRefusals) {
  TinyModel m{"plan_refusals"};
  const model::Checkpoint checkpoint = model::Checkpoint::open(write_tiny_model(m, 1));
  model::Model runner(test::device(), checkpoint, 32, 8);
  auto refused = [&](model::SelectionPlan plan, const std::string& says) {
    try {
      runner.select(plan);
      ADD_FAILURE() << "accepted a plan that should say: " << says;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
    EXPECT_FALSE(runner.selection().any()) << "a refused plan stays dense";
  };
  refused({.decode_method = "snapkv", .decode_budget = 8}, "every past query");
  refused({.decode_method = "loki", .decode_budget = 8}, "whole cache");
  refused({.decode_method = "quest", .decode_budget = 0}, "budget");
  refused({.decode_method = "nosuch", .decode_budget = 8}, "unknown method");
  refused({.decode_method = "quest", .decode_budget = 8, .dense_layers = {2}}, "layers 0 to 1");
  EXPECT_THROW(runner.rewind(1), InputError);  // nothing appended yet
}

TEST(ModelConfig, RefusesWhatItCannotRun) {
  const std::string base = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 100,
    "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "rope_theta": 10000.0)";
  EXPECT_NO_THROW(model::parse_hf_config(base + "}", "c"));
  auto refused = [&](const std::string& extra, const std::string& words) {
    try {
      model::parse_hf_config(base + extra + "}", "c");
      ADD_FAILURE() << "accepted " << extra;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  };
  refused(R"(, "hidden_act": "gelu")", "hidden_act");
  refused(R"(, "rope_scaling": {"rope_type": "dynamic", "factor": 4.0})", "rope_type");
  refused(R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "partial_rotary_factor": 0.5})", "partial_rotary_factor");
  refused(R"(, "architectures": ["Qwen3ForCausalLM"], "attention_bias": true)", "attention_bias");
  refused(R"(, "head_dim": 12)", "head_dim");
  refused(R"(, "mlp_bias": true)", "mlp_bias");
  EXPECT_THROW(model::parse_hf_config("{", "c"), InputError);
  EXPECT_THROW(model::parse_hf_config(R"({"architectures": ["GPT2LMHeadModel"]})", "c"), InputError);
  // Families kvscope cannot run faithfully (GPT-OSS's experts and attention
  // sinks, Gemma 2's soft-capping) are refused naming the field and what runs.
  refused(R"(, "architectures": ["GptOssForCausalLM"])", "Qwen3ForCausalLM");
  refused(R"(, "architectures": ["Gemma2ForCausalLM"])", "architectures");
  // Mistral: a sliding window shorter than the sequence is refused with the reason.
  const model::ModelConfig mistral = model::parse_hf_config(
      R"({"architectures": ["MistralForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 96, "vocab_size": 100, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
          "rope_theta": 10000.0, "sliding_window": 1024})",
      "c");
  EXPECT_NO_THROW(model::check_sequence_length(mistral, 1024));
  EXPECT_THROW(model::check_sequence_length(mistral, 1025), InputError);
  EXPECT_THROW(model::check_sequence_length(mistral, 5000), InputError);
}

// YaRN's frequencies and attention factor as transformers' rope initialisation
// computes them (float32 where it does): head_dim 16, theta 10000, factor 4 over
// an original context of 64 puts the ramp over pairs 0 to 3 (beta 32 and 1).
// The values come from its formula evaluated in float32 by hand.
TEST(ModelConfig, YarnFrequenciesFollowTransformers) {
  const model::ModelConfig c = model::parse_hf_config(
      R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 96, "vocab_size": 100, "max_position_embeddings": 256, "rms_norm_eps": 1e-5,
          "rope_parameters": {"rope_theta": 10000.0, "rope_type": "yarn", "factor": 4.0,
                              "original_max_position_embeddings": 64}})",
      "c");
  const std::vector<double> want = {1.0,       0.23717081546783447,  0.04999999701976776,   0.007905694656074047,
                                    0.0024999999441206455, 0.0007905694656074047, 0.0002500000118743628, 7.905694656074047e-05};
  ASSERT_EQ(c.rope_inverse_frequencies.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(c.rope_inverse_frequencies[i], want[i], 1e-6 * want[i]) << "pair " << i;
  EXPECT_NEAR(c.rope_attention_factor, 0.1 * std::log(4.0) + 1, 1e-12);
  // attention_factor given, or mscale over mscale_all_dim (DeepSeek's), instead of 0.1 ln(factor) + 1.
  const std::string base = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100, "max_position_embeddings": 256,
    "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
    "original_max_position_embeddings": 64, )";
  EXPECT_EQ(model::parse_hf_config(base + R"("attention_factor": 0.5}})", "c").rope_attention_factor, 0.5);
  EXPECT_NEAR(model::parse_hf_config(base + R"("mscale": 2.0, "mscale_all_dim": 1.0}})", "c").rope_attention_factor,
              (0.2 * std::log(4.0) + 1) / (0.1 * std::log(4.0) + 1), 1e-12);
}

TEST(Checkpoint, RefusesMissingAndMisshapenTensors) {
  TinyModel m{"refusals"};
  const auto dir = write_tiny_model(m, 1);
  // A config that promises more layers than the weights hold.
  auto config = nlohmann::json::parse(std::ifstream(dir / "config.json"));
  config["num_hidden_layers"] = 3;
  std::ofstream(dir / "config.json") << config.dump();
  try {
    model::Checkpoint::open(dir);
    ADD_FAILURE() << "accepted a missing layer";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.2."), std::string::npos) << e.what();
  }
  config["num_hidden_layers"] = 2;
  config["intermediate_size"] = 80;
  std::ofstream(dir / "config.json") << config.dump();
  try {
    model::Checkpoint::open(dir);
    ADD_FAILURE() << "accepted a misshapen tensor";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("mlp.gate_proj.weight"), std::string::npos) << e.what();
  }
  // A shard index that points out of the directory.
  std::ofstream(dir / "model.safetensors.index.json") << R"({"weight_map": {"model.embed_tokens.weight": "../x.safetensors"}})";
  EXPECT_THROW(model::Checkpoint::open(dir), InputError);
}

TEST(Checkpoint, RefusesTruncatedLlama2c) {
  std::ifstream in(KVSCOPE_ASSETS "/models/stories260K/stories260K.bin", std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 1000u);
  auto as_bytes = [](const std::vector<char>& b) {
    std::vector<std::byte> out(b.size());
    std::memcpy(out.data(), b.data(), b.size());
    return out;
  };
  EXPECT_NO_THROW(model::Checkpoint::from_llama2c(as_bytes(bytes), "s"));
  std::vector<char> truncated(bytes.begin(), bytes.end() - 4);
  EXPECT_THROW(model::Checkpoint::from_llama2c(as_bytes(truncated), "s"), InputError);
  std::vector<char> hostile = bytes;
  const int32_t huge = 1 << 30;
  std::memcpy(hostile.data() + 4, &huge, 4);  // hidden_dim
  EXPECT_THROW(model::Checkpoint::from_llama2c(as_bytes(hostile), "s"), InputError);
}

}  // namespace
}  // namespace kv
