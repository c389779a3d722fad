#pragma once
// The pre-tokenizer split patterns the tokenizer reads, as tokenizer.json
// spells them (its Split's "Regex"): the tokenizer recognises them, and a
// GGUF file's pre-tokenizer name stands for one of them.

namespace kv::model {

inline constexpr const char* kGpt2Split =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
inline constexpr const char* kLlama3Split =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+"
    "|\\s+(?!\\S)|\\s+";
// Qwen2's and Qwen3's: Llama 3's with \p{N} (a digit a piece) for \p{N}{1,3}.
inline constexpr const char* kQwen2Split =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+"
    "|\\s+(?!\\S)|\\s+";

}  // namespace kv::model
