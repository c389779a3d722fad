// Build tool: rewrites a SPIR-V module's NV cooperative matrices
// (SPV_NV_cooperative_matrix, the only kind Debian 12's glslang 12 writes) as
// KHR ones (SPV_KHR_cooperative_matrix), and writes the module as a C array.
//
// Why: an NV matrix type serves as A, B and accumulator alike, so NVIDIA's
// driver loads every fp16 matrix in the A operand's register layout and moves
// it into the B layout with a MOVM per register before each product. A KHR
// type names its use, so a matrix loaded as B is loaded in B's layout. In the
// H100's SASS the dense chunk kernel's key loop held 128 MOVMs a tile and
// subgroup with NV matrices and none with KHR ones, and the 32k dense prefill
// chunk went from 434 to 303-306 us (docs/perf-experiments.md).
//
// What it handles is what glslang writes for attention_chunk.glsl: fp16
// matrices (A, or B where a product takes them as B) and fp32 accumulators,
// held in Function variables and reached through OpLoad and OpStore. A B
// matrix anywhere else (an array, a parameter, also used as A), a matrix
// length, or a column-major flag that is not a constant fails the build with
// one line, rather than emit a module no validator here can check (Debian
// 12's SPIRV-Tools predate the KHR extension).
//
// Usage: spirv_coopmat_khr IN.spv OUT.h ARRAY_NAME
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

enum Op : uint32_t {
  kOpExtension = 10,
  kOpCapability = 17,
  kOpTypeInt = 21,
  kOpTypeFloat = 22,
  kOpTypePointer = 32,
  kOpConstantTrue = 41,
  kOpConstantFalse = 42,
  kOpConstant = 43,
  kOpSpecConstantOp = 52,
  kOpFunctionParameter = 55,
  kOpVariable = 59,
  kOpLoad = 61,
  kOpStore = 62,
  kOpAccessChain = 65,
  kOpCompositeExtract = 81,
  kOpCompositeInsert = 82,
  kOpTypeCooperativeMatrixKHR = 4456,
  kOpCooperativeMatrixLoadKHR = 4457,
  kOpCooperativeMatrixStoreKHR = 4458,
  kOpCooperativeMatrixMulAddKHR = 4459,
  kOpTypeCooperativeMatrixNV = 5358,
  kOpCooperativeMatrixLoadNV = 5359,
  kOpCooperativeMatrixStoreNV = 5360,
  kOpCooperativeMatrixMulAddNV = 5361,
  kOpCooperativeMatrixLengthNV = 5362,
};
constexpr uint32_t kCapabilityCooperativeMatrixNV = 5357, kCapabilityCooperativeMatrixKHR = 6022;
constexpr uint32_t kStorageFunction = 7;
constexpr uint32_t kUseA = 0, kUseB = 1, kUseAccumulator = 2;  // MatrixAKHR, MatrixBKHR, MatrixAccumulatorKHR

struct Instruction {
  uint32_t op;
  std::vector<uint32_t> operands;
};

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "spirv_coopmat_khr: %s\n", why.c_str());
  std::exit(1);
}

std::vector<uint32_t> string_words(const std::string& text) {
  std::vector<uint32_t> words((text.size() + 4) / 4, 0);
  std::memcpy(words.data(), text.data(), text.size());
  return words;
}

std::string words_string(const std::vector<uint32_t>& words) {
  std::string text(words.size() * 4, '\0');
  std::memcpy(text.data(), words.data(), text.size());
  return text.substr(0, text.find('\0'));
}

class Module {
 public:
  explicit Module(const std::vector<uint32_t>& words) : header_(words.begin(), words.begin() + 5) {
    for (size_t at = 5; at < words.size();) {
      const uint32_t count = words[at] >> 16;
      if (count == 0 || at + count > words.size()) fail("truncated instruction");
      code_.push_back({words[at] & 0xffffu, {words.begin() + at + 1, words.begin() + at + count}});
      at += count;
    }
  }

  void rewrite() {
    find_types();
    find_b_variables();
    std::vector<Instruction> out;
    bool uses_emitted = false;
    for (Instruction in : code_) {
      switch (in.op) {
        case kOpCapability:
          if (in.operands[0] == kCapabilityCooperativeMatrixNV) in.operands[0] = kCapabilityCooperativeMatrixKHR;
          break;
        case kOpExtension:
          if (words_string(in.operands) == "SPV_NV_cooperative_matrix") in.operands = string_words("SPV_KHR_cooperative_matrix");
          break;
        case kOpTypeCooperativeMatrixNV: {
          if (!uses_emitted) {  // constants a type may name, declared before it
            for (uint32_t use : {kUseA, kUseB, kUseAccumulator}) out.push_back({kOpConstant, {uint_type_, use_ids_[use], use}});
            if (!int_type_found_) out.push_back({kOpTypeInt, {int_type_, 32, 1}});
            for (uint32_t layout : {0u, 1u}) out.push_back({kOpConstant, {int_type_, layout_ids_[layout], layout}});
            uses_emitted = true;
          }
          const uint32_t id = in.operands[0];
          std::vector<uint32_t> shape(in.operands.begin() + 1, in.operands.end());
          in = {kOpTypeCooperativeMatrixKHR, {id}};
          in.operands.insert(in.operands.end(), shape.begin(), shape.end());
          in.operands.push_back(use_ids_[half_types_.count(id) ? kUseA : kUseAccumulator]);
          out.push_back(in);
          if (b_twin_.count(id)) {
            Instruction twin{kOpTypeCooperativeMatrixKHR, {b_twin_[id]}};
            twin.operands.insert(twin.operands.end(), shape.begin(), shape.end());
            twin.operands.push_back(use_ids_[kUseB]);
            out.push_back(twin);
          }
          continue;
        }
        case kOpTypePointer:
          out.push_back(in);
          if (in.operands[1] == kStorageFunction && b_twin_.count(in.operands[2]))
            out.push_back({kOpTypePointer, {b_pointer_[in.operands[0]], kStorageFunction, b_twin_[in.operands[2]]}});
          continue;
        case kOpVariable:
          if (b_variables_.count(in.operands[1])) in.operands[0] = b_pointer_.at(in.operands[0]);
          break;
        case kOpLoad:
          if (b_variables_.count(in.operands[2])) in.operands[0] = b_twin_.at(in.operands[0]);
          break;
        case kOpCooperativeMatrixLoadNV: {  // type, result, pointer, stride, column major, memory access...
          std::vector<uint32_t>& o = in.operands;
          const uint32_t type = b_values_.count(o[1]) ? b_twin_.at(o[0]) : o[0];
          std::vector<uint32_t> rewritten{type, o[1], o[2], layout(o[4]), o[3]};
          rewritten.insert(rewritten.end(), o.begin() + 5, o.end());
          in = {kOpCooperativeMatrixLoadKHR, rewritten};
          break;
        }
        case kOpCooperativeMatrixStoreNV: {  // pointer, object, stride, column major, memory access...
          std::vector<uint32_t>& o = in.operands;
          std::vector<uint32_t> rewritten{o[0], o[1], layout(o[3]), o[2]};
          rewritten.insert(rewritten.end(), o.begin() + 4, o.end());
          in = {kOpCooperativeMatrixStoreKHR, rewritten};
          break;
        }
        case kOpCooperativeMatrixMulAddNV:
          in.op = kOpCooperativeMatrixMulAddKHR;
          break;
        default:
          break;
      }
      out.push_back(in);
    }
    code_ = out;
  }

  std::vector<uint32_t> words() const {
    std::vector<uint32_t> words(header_);
    words[3] = bound_;
    for (const Instruction& in : code_) {
      words.push_back(uint32_t(in.operands.size() + 1) << 16 | in.op);
      words.insert(words.end(), in.operands.begin(), in.operands.end());
    }
    return words;
  }

 private:
  uint32_t new_id() { return bound_++; }

  // The matrix types, the types the rewrite needs, and the module's booleans.
  void find_types() {
    bound_ = header_[3];
    std::set<uint32_t> half_floats, full_floats;
    for (const Instruction& in : code_) {
      if (in.op == kOpCooperativeMatrixLengthNV ||
          (in.op == kOpSpecConstantOp && in.operands[2] == kOpCooperativeMatrixLengthNV))
        fail("a matrix length: not handled");
      if (in.op == kOpTypeFloat && in.operands[1] == 16) half_floats.insert(in.operands[0]);
      if (in.op == kOpTypeFloat && in.operands[1] == 32) full_floats.insert(in.operands[0]);
      if (in.op == kOpTypeInt && in.operands[1] == 32 && in.operands[2] == 0) uint_type_ = in.operands[0];
      if (in.op == kOpTypeInt && in.operands[1] == 32 && in.operands[2] == 1) int_type_ = in.operands[0];
      if (in.op == kOpConstantTrue) true_ids_.insert(in.operands[1]);
      if (in.op == kOpConstantFalse) false_ids_.insert(in.operands[1]);
      if (in.op == kOpTypeCooperativeMatrixNV) {
        if (half_floats.count(in.operands[1])) half_types_.insert(in.operands[0]);
        else if (!full_floats.count(in.operands[1])) fail("a matrix of neither fp16 nor fp32");
      }
    }
    if (half_types_.empty()) fail("no fp16 cooperative matrix");
    if (!uint_type_) fail("no 32-bit unsigned integer type");
    int_type_found_ = int_type_ != 0;
    if (!int_type_found_) int_type_ = new_id();  // the layouts are ints, as glslang writes them for KHR
    for (uint32_t& id : use_ids_) id = new_id();
    for (uint32_t& id : layout_ids_) id = new_id();
  }

  // The Function variables (and values) that hold B operands: each product's B
  // operand is loaded from one, and whatever is stored into one is B too.
  void find_b_variables() {
    std::map<uint32_t, uint32_t> loaded_from;        // value -> variable
    std::map<uint32_t, uint32_t> variable_type;      // variable -> pointer type
    std::map<uint32_t, uint32_t> pointee;            // Function pointer type -> matrix type
    std::map<uint32_t, uint32_t> matrix_loads;        // value -> matrix type
    std::set<uint32_t> parameters, a_or_c_values;
    for (const Instruction& in : code_) {
      if (in.op == kOpLoad) loaded_from[in.operands[1]] = in.operands[2];
      if (in.op == kOpVariable) variable_type[in.operands[1]] = in.operands[0];
      if (in.op == kOpTypePointer && in.operands[1] == kStorageFunction && half_types_.count(in.operands[2]))
        pointee[in.operands[0]] = in.operands[2];
      if (in.op == kOpFunctionParameter) parameters.insert(in.operands[1]);
      if (in.op == kOpCooperativeMatrixLoadNV) matrix_loads[in.operands[1]] = in.operands[0];
      if (in.op == kOpCooperativeMatrixMulAddNV) {
        b_values_.insert(in.operands[3]);
        a_or_c_values.insert(in.operands[2]);
        a_or_c_values.insert(in.operands[4]);
      }
    }
    for (bool grew = true; grew;) {
      grew = false;
      for (uint32_t value : std::set<uint32_t>(b_values_)) {
        if (matrix_loads.count(value)) continue;
        auto from = loaded_from.find(value);
        if (from == loaded_from.end()) fail("a B operand neither loaded from a variable nor from memory");
        grew |= b_variables_.insert(from->second).second;
      }
      for (const Instruction& in : code_)
        if (in.op == kOpStore && b_variables_.count(in.operands[0])) grew |= b_values_.insert(in.operands[1]).second;
    }
    for (uint32_t value : b_values_) {  // loaded as B straight from memory
      auto load = matrix_loads.find(value);
      if (load == matrix_loads.end()) continue;
      if (!half_types_.count(load->second)) fail("a B operand that is not an fp16 matrix");
      if (!b_twin_.count(load->second)) b_twin_[load->second] = new_id();
    }
    for (uint32_t variable : b_variables_) {
      if (parameters.count(variable) || !variable_type.count(variable)) fail("a B operand held outside a Function variable");
      auto matrix = pointee.find(variable_type[variable]);
      if (matrix == pointee.end()) fail("a B operand in a variable that is not one fp16 matrix");
      if (!b_twin_.count(matrix->second)) b_twin_[matrix->second] = new_id();
      if (!b_pointer_.count(variable_type[variable])) b_pointer_[variable_type[variable]] = new_id();
    }
    for (const auto& [value, variable] : loaded_from)
      if (b_variables_.count(variable) && a_or_c_values.count(value)) fail("one variable holds both A and B operands");
    // The kernels index A operands and accumulators by NVIDIA's mma layout
    // (fragment_layout.h); a B matrix's elements sit elsewhere once typed B.
    for (const Instruction& in : code_) {
      if (in.op == kOpAccessChain && b_variables_.count(in.operands[2])) fail("a B operand accessed element by element");
      if (in.op == kOpCompositeExtract && b_values_.count(in.operands[2])) fail("a B operand accessed element by element");
      if (in.op == kOpCompositeInsert && b_values_.count(in.operands[3])) fail("a B operand accessed element by element");
    }
  }

  uint32_t layout(uint32_t column_major) const {
    if (true_ids_.count(column_major)) return layout_ids_[1];  // ColumnMajorKHR
    if (false_ids_.count(column_major)) return layout_ids_[0];  // RowMajorKHR
    fail("a column-major flag that is not a constant");
  }

  std::vector<uint32_t> header_;
  std::vector<Instruction> code_;
  uint32_t bound_ = 0, uint_type_ = 0, int_type_ = 0;
  bool int_type_found_ = false;
  uint32_t use_ids_[3] = {}, layout_ids_[2] = {};
  std::set<uint32_t> half_types_, true_ids_, false_ids_, b_values_, b_variables_;
  std::map<uint32_t, uint32_t> b_twin_;     // fp16 matrix type -> its MatrixB twin
  std::map<uint32_t, uint32_t> b_pointer_;  // Function pointer to it -> pointer to the twin
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) fail("usage: spirv_coopmat_khr IN.spv OUT.h ARRAY_NAME");
  std::ifstream in(argv[1], std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) fail(std::string("cannot read ") + argv[1]);
  if (bytes.size() < 20 || bytes.size() % 4 != 0) fail(std::string(argv[1]) + " is not SPIR-V");
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  if (words[0] != 0x07230203u) fail(std::string(argv[1]) + " is not SPIR-V (magic)");

  Module module(words);
  module.rewrite();
  const std::vector<uint32_t> out = module.words();

  const std::string temporary = std::string(argv[2]) + ".tmp";
  std::FILE* file = std::fopen(temporary.c_str(), "w");
  if (!file) fail(std::string("cannot write ") + temporary);
  std::fprintf(file, "// Generated by spirv_coopmat_khr from %s.\n#pragma once\n#include <cstdint>\nconst uint32_t %s[] = {",
               argv[1], argv[3]);
  for (size_t i = 0; i < out.size(); ++i) std::fprintf(file, "%s0x%08x", i % 8 ? ", " : i ? ",\n    " : "\n    ", out[i]);
  std::fprintf(file, "\n};\n");
  if (std::fclose(file) != 0 || std::rename(temporary.c_str(), argv[2]) != 0) fail(std::string("cannot write ") + argv[2]);
  return 0;
}
