// Capture reader and writer: round trip, and every check of docs/capture.md's
// "What a reader checks" refusing a malformed file with a one-line error.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <fstream>
#include <random>

#include "base/error.h"
#include "io/capture.h"
#include "io/safetensors.h"
#include "io/selection_file.h"
#include "random_capture.h"
#include "temp_files.h"

namespace kv {
namespace {

namespace fs = std::filesystem;
using test::temp_path;

void write_raw(const fs::path& path, const std::string& header, size_t data_bytes, uint64_t claimed_header = 0) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  uint64_t length = claimed_header ? claimed_header : header.size();
  for (int i = 0; i < 8; ++i) out.put(char((length >> (8 * i)) & 0xff));
  out << header;
  out << std::string(data_bytes, '\0');
}

const std::string kMeta = R"("__metadata__":{"format":"kvscope-capture/1","model":"test","source":"test"})";

// A valid header for one layer with H=4, G=2, T=3, d=8, F16: q 192 bytes, k and v 96 each.
std::string layer_header(const std::string& q_dtype = "F16", const std::string& k_shape = "[2,3,8]",
                         const std::string& v_offsets = "[288,384]") {
  return "{" + kMeta + R"(,"layers.0.q":{"dtype":")" + q_dtype + R"(","shape":[4,3,8],"data_offsets":[0,192]},)" +
         R"("layers.0.k":{"dtype":"F16","shape":)" + k_shape + R"(,"data_offsets":[192,288]},)" +
         R"("layers.0.v":{"dtype":"F16","shape":[2,3,8],"data_offsets":)" + v_offsets + "}}";
}

// Expects an InputError naming the file and `needle`, on one line.
void expect_refused(const fs::path& path, const std::string& needle) {
  try {
    Capture capture(path);
    FAIL() << "accepted a malformed file; expected an error mentioning '" << needle << "'";
  } catch (const InputError& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    EXPECT_NE(message.find(needle), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(Capture, ValidHandWrittenFileLoads) {
  fs::path path = temp_path("valid.safetensors");
  write_raw(path, layer_header(), 384);
  Capture capture(path);
  ASSERT_EQ(capture.layers().size(), 1u);
  EXPECT_EQ(capture.layer(0).shape.heads, 4u);
  EXPECT_EQ(capture.layer(0).shape.kv_heads, 2u);
  EXPECT_EQ(capture.layer(0).shape.tokens, 3u);
  EXPECT_DOUBLE_EQ(capture.scale(capture.layer(0)), 1.0 / std::sqrt(8.0));
}

TEST(Capture, RoundTripsEveryDtypeWithTokens) {
  const uint32_t seed = test::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  for (DType dtype : {DType::f16, DType::bf16, DType::f32}) {
    const AttentionShape shape{6, 3, 17, 16};
    std::vector<float> q(6 * 17 * 16), k(3 * 17 * 16), v(3 * 17 * 16);
    for (auto* t : {&q, &k, &v})
      for (float& x : *t) x = normal(rng);
    std::vector<std::byte> qb = from_float(dtype, q), kb = from_float(dtype, k), vb = from_float(dtype, v);
    CaptureData data;
    data.model = "unit-test";
    data.source = "test";
    data.scale = 0.2;
    data.layers.push_back({3, shape, dtype, qb, kb, vb});
    data.layers.push_back({7, shape, dtype, qb, kb, vb});
    for (int i = 0; i < 17; ++i) {
      data.token_ids.push_back(100 + i);
      data.token_text.push_back(i % 2 ? " wörd" : "x");
    }
    fs::path path = temp_path(std::string("roundtrip_") + dtype_name(dtype) + ".safetensors");
    write_capture(path, data);

    Capture capture(path);
    ASSERT_EQ(capture.layers().size(), 2u);
    const CaptureLayer& layer = capture.layer(7);
    EXPECT_EQ(layer.dtype, dtype);
    EXPECT_EQ(layer.shape.heads, 6u);
    EXPECT_EQ(layer.shape.dim, 16u);
    EXPECT_DOUBLE_EQ(capture.scale(layer), 0.2);
    EXPECT_EQ(capture.model(), "unit-test");
    EXPECT_EQ(std::vector<std::byte>(layer.q->data.begin(), layer.q->data.end()), qb);
    EXPECT_EQ(std::vector<std::byte>(layer.v->data.begin(), layer.v->data.end()), vb);
    EXPECT_EQ(capture.token_ids()[16], 116);
    EXPECT_EQ(capture.token_text(1), " wörd");
    EXPECT_EQ(capture.token_text(2), "x");
    EXPECT_THROW(capture.layer(0), InputError);
  }
}

TEST(Capture, RefusesTruncatedFile) {
  fs::path path = temp_path("truncated.safetensors");
  write_raw(path, layer_header(), 300);  // data section shorter than v's range
  expect_refused(path, "layers.0.v");
  write_raw(path, "", 0);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "abc";
  expect_refused(path, "shorter than the 8-byte header length");
}

TEST(Capture, RefusesOversizedHeaderLength) {
  fs::path path = temp_path("oversized.safetensors");
  write_raw(path, layer_header(), 384, uint64_t(1) << 40);
  expect_refused(path, "header length");
}

TEST(Capture, RefusesOverlappingRanges) {
  fs::path path = temp_path("overlap.safetensors");
  write_raw(path, layer_header("F16", "[2,3,8]", "[200,296]"), 384);
  expect_refused(path, "overlaps");
}

TEST(Capture, RefusesUnknownAndWrongDtypes) {
  fs::path path = temp_path("dtype.safetensors");
  write_raw(path, layer_header("F8_E4M3"), 384);
  expect_refused(path, "unknown dtype 'F8_E4M3'");
  write_raw(path, layer_header("I32"), 384);  // known, 4 bytes: the range no longer matches
  expect_refused(path, "layers.0.q");
}

TEST(Capture, RefusesShapeMismatches) {
  fs::path path = temp_path("shape.safetensors");
  write_raw(path, layer_header("F16", "[2,4,6]"), 384);  // same bytes, wrong T and d
  expect_refused(path, "disagrees");
  write_raw(path, layer_header("F16", "[2,3,9]"), 384);  // bytes do not match shape
  expect_refused(path, "does not match shape");
  std::string bad_group = layer_header();
  bad_group.replace(bad_group.find("[4,3,8]"), 7, "[3,4,8]");  // H=3, G=2; also T mismatch
  write_raw(path, bad_group, 384);
  expect_refused(path, "layers.0");
}

TEST(Capture, RefusesBadHeaderJsonAndMissingPieces) {
  fs::path path = temp_path("json.safetensors");
  write_raw(path, "{\"layers.0.q\": [", 16);
  expect_refused(path, "not valid JSON");
  write_raw(path, "{" + kMeta + "}", 0);
  expect_refused(path, "no layers");
  std::string no_format = layer_header();
  no_format.replace(no_format.find("kvscope-capture/1"), 17, "something-else/2");
  write_raw(path, no_format, 384);
  expect_refused(path, "format");
  std::string no_v = "{" + kMeta + R"(,"layers.0.q":{"dtype":"F16","shape":[4,3,8],"data_offsets":[0,192]},)" +
                     R"("layers.0.k":{"dtype":"F16","shape":[2,3,8],"data_offsets":[192,288]}})";
  write_raw(path, no_v, 288);
  expect_refused(path, "layers.0.v");
  write_raw(path, "{" + kMeta + R"(,"layers.0.q":{"dtype":"F16","shape":[-1,3,8],"data_offsets":[0,192]}})", 192);
  expect_refused(path, "non-negative");
}

TEST(Capture, MissingFileIsAnInputError) {
  expect_refused(temp_path("does_not_exist.safetensors"), "cannot open");
}

TEST(Capture, WriterLeavesNoPartialFileOnFailure) {
  fs::path dir = temp_path("no_such_dir") / "sub";
  CaptureData data;
  std::vector<std::byte> bytes(2 * 1 * 8 * 2);
  data.layers.push_back({0, {2, 2, 1, 8}, DType::f16, bytes, bytes, bytes});
  EXPECT_THROW(write_capture(dir / "x.safetensors", data), InputError);
  EXPECT_FALSE(fs::exists(dir / "x.safetensors"));
  EXPECT_FALSE(fs::exists(dir / "x.safetensors.partial"));
}

// A NaN or an infinity planted at a known place is found, counted and named;
// require_finite refuses the capture unless allowed.
TEST(Capture, FindsTheFirstNonFiniteValue) {
  const AttentionShape s{4, 2, 30, 16};
  for (DType dtype : {DType::f16, DType::bf16, DType::f32}) {
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
      std::vector<float> q(size_t(s.heads) * s.tokens * s.dim, 0.5f), k(size_t(s.kv_heads) * s.tokens * s.dim, -0.25f),
          v(k.size(), 1.0f);
      k[(size_t(1) * s.tokens + 17) * s.dim + 5] = bad;  // head 1, token 17, channel 5
      k[(size_t(1) * s.tokens + 29) * s.dim + 0] = -bad;
      std::vector<std::byte> qb = from_float(dtype, q), kb = from_float(dtype, k), vb = from_float(dtype, v),
                             zeros = from_float(dtype, std::vector<float>(k.size(), 0.0f));
      CaptureData data;
      data.model = "nonfinite";
      data.source = "test";
      data.layers.push_back({0, s, dtype, qb, zeros, vb});  // the spans must outlive write_capture
      data.layers.push_back({3, s, dtype, qb, kb, vb});
      const std::filesystem::path path = test::temp_path(std::string("nonfinite_") + dtype_name(dtype) + ".safetensors");
      write_capture(path, data);
      Capture capture(path);
      const std::optional<NonFiniteValue> found = first_non_finite(capture);
      ASSERT_TRUE(found.has_value()) << dtype_name(dtype);
      EXPECT_EQ(found->tensor, "layers.3.k");
      EXPECT_EQ(found->head, 1u);
      EXPECT_EQ(found->token, 17u);
      EXPECT_EQ(found->channel, 5u);
      EXPECT_EQ(found->count, 2u);
      EXPECT_THROW(require_finite(capture, false), InputError);
      EXPECT_NO_THROW(require_finite(capture, true));
    }
  }
}

TEST(Capture, FiniteCaptureHasNoNonFiniteValue) {
  const AttentionShape s{2, 1, 8, 8};
  std::vector<float> values(size_t(s.heads) * s.tokens * s.dim, 65504.0f);  // the largest finite fp16
  std::vector<std::byte> q = from_float(DType::f16, values),
                         kv = from_float(DType::f16, std::span(values).first(size_t(s.kv_heads) * s.tokens * s.dim));
  CaptureData data;
  data.model = "finite";
  data.source = "test";
  data.layers.push_back({0, s, DType::f16, q, kv, kv});
  const std::filesystem::path path = test::temp_path("finite.safetensors");
  write_capture(path, data);
  EXPECT_FALSE(first_non_finite(Capture(path)).has_value());
}

}  // namespace
}  // namespace kv

namespace kv {
namespace {

// The selection file of docs/cli.md read back, and refused when it breaks a rule.
std::filesystem::path write_selection(const std::string& name, std::vector<int32_t> indices,
                                      std::vector<int32_t> positions, std::map<std::string, std::string> metadata) {
  const std::filesystem::path path = test::temp_path(name + ".safetensors");
  const uint64_t blocks = positions.size(), width = 3, rows = indices.size() / (blocks * width);
  write_safetensors(path,
                    {{"indices", DType::i32, {blocks, rows, width}, std::as_bytes(std::span(indices))},
                     {"block_pos", DType::i32, {blocks}, std::as_bytes(std::span(positions))}},
                    metadata);
  return path;
}

TEST(SelectionFile, ReadsWhatSelectWritesAndRefusesBrokenRows) {
  const std::map<std::string, std::string> metadata{
      {"method", "quest"}, {"mode", "decode"}, {"budget", "3"}, {"granularity", "kv_head"}, {"params", "{\"page_size\":16}"}};
  const std::vector<int32_t> good{0, 4, 9, 2, -1, -1, 1, 2, 3, 5, 6, 7};  // 2 blocks x 2 rows x 3
  const SelectionFile s = read_selection_file(write_selection("selection_ok", good, {10, 11}, metadata));
  EXPECT_EQ(s.method, "quest");
  EXPECT_EQ(s.mode, Mode::decode);
  EXPECT_EQ(s.budget, 3u);
  EXPECT_EQ(s.granularity, Granularity::kv_head);
  EXPECT_EQ(s.blocks, 2u);
  EXPECT_EQ(s.rows, 2u);
  EXPECT_EQ(s.width, 3u);
  EXPECT_EQ(s.indices, good);
  EXPECT_EQ(s.block_positions, (std::vector<int32_t>{10, 11}));

  std::vector<int32_t> descending = good, after_padding = good, below = good;
  descending[1] = 0;
  after_padding[5] = 8;
  below[0] = -2;
  EXPECT_THROW(read_selection_file(write_selection("selection_desc", descending, {10, 11}, metadata)), InputError);
  EXPECT_THROW(read_selection_file(write_selection("selection_pad", after_padding, {10, 11}, metadata)), InputError);
  EXPECT_THROW(read_selection_file(write_selection("selection_neg", below, {10, 11}, metadata)), InputError);
  auto without_mode = metadata;
  without_mode.erase("mode");
  EXPECT_THROW(read_selection_file(write_selection("selection_nomode", good, {10, 11}, without_mode)), InputError);
  auto bad_params = metadata;
  bad_params["params"] = "{";
  EXPECT_THROW(read_selection_file(write_selection("selection_params", good, {10, 11}, bad_params)), InputError);
}

}  // namespace
}  // namespace kv
