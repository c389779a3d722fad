#!/usr/bin/env python3
"""Token ids that Hugging Face `tokenizers` gives for tests/data/tokenizer_texts.json,
for the golden test of kvscope's C++ tokenizer (tests/test_tokenizer.cpp).

Three tokenizers, each derived from assets/models/llama-debian-5m/tokenizer.json
exactly as the C++ test derives them (variant()): as it is (Digits then GPT-2's
ByteLevel split), GPT-2's ByteLevel split alone, and Llama 3's Split with
ignore_merges; each with two added special tokens. Runs where `tokenizers` is
installed (the GPU machine):

  python3 tools/dev/tokenizer_golden.py > tests/data/tokenizer_golden.json
"""
import json
import sys

from tokenizers import Tokenizer

LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def variant(base, name):
    j = json.loads(json.dumps(base))
    if name == "gpt2":
        j["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    elif name == "llama3":
        j["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3_SPLIT}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
        j["model"]["ignore_merges"] = True
    vocab = len(j["model"]["vocab"])
    for i, content in enumerate(["<|user|>", "<|assistant|>"]):
        j["added_tokens"].append({"id": vocab + i, "content": content, "single_word": False, "lstrip": False,
                                  "rstrip": False, "normalized": False, "special": True})
    return j


def main():
    base = json.load(open("assets/models/llama-debian-5m/tokenizer.json"))
    texts = json.load(open("tests/data/tokenizer_texts.json"))
    out = {}
    for name in ["digits_bytelevel", "gpt2", "llama3"]:
        tokenizer = Tokenizer.from_str(json.dumps(variant(base, name)))
        out[name] = [tokenizer.encode(t, add_special_tokens=False).ids for t in texts]
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
