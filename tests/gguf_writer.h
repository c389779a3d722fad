#pragma once
// A little-endian GGUF writer, enough for the tests (tests/test_gguf.cpp,
// and tests/test_model.cpp's tiny models as GGUF files).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kv::test {

struct GgufWriter {
  std::vector<std::byte> out;
  template <typename T>
  void put(T value) {
    const auto* p = reinterpret_cast<const std::byte*>(&value);
    out.insert(out.end(), p, p + sizeof(T));
  }
  void text(const std::string& s) {
    put<uint64_t>(s.size());
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    out.insert(out.end(), p, p + s.size());
  }
  // A metadata entry's key and value type; its value follows.
  void key(const std::string& name, uint32_t type) {
    text(name);
    put<uint32_t>(type);
  }
  void pad(size_t alignment) {
    while (out.size() % alignment) out.push_back(std::byte{0});
  }
};

}  // namespace kv::test
