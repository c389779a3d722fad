#!/usr/bin/env python3
"""Token ids that Hugging Face `tokenizers` gives for tests/data/tokenizer_texts.json,
for the golden test of kvscope's C++ tokenizer (tests/test_tokenizer.cpp).

Three tokenizers, each derived from assets/models/llama-debian-5m/tokenizer.json
exactly as the C++ test derives them (variant()): as it is (Digits then GPT-2's
ByteLevel split), GPT-2's ByteLevel split alone, and Llama 3's Split with
ignore_merges; each with two added special tokens. Runs where `tokenizers` is
installed (the GPU machine):

  python3 tools/dev/tokenizer_golden.py > tests/data/tokenizer_golden.json

With --real it checks tests/data/tokenizer_real_golden.json instead (the ids
and decoded text @lenml/tokenizers gave for tests/data/tokenizer_corpus.json
with the real files of tests/data/tokenizers.tar.xz: tokenizer_golden.mjs)
against `tokenizers`, text by text, and exits 1 on any difference:

  python3 tools/dev/tokenizer_golden.py --real
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


def check_real():
    import tarfile
    import tempfile

    texts = json.load(open("tests/data/tokenizer_corpus.json"))
    golden = json.load(open("tests/data/tokenizer_real_golden.json"))
    differences = 0
    with tempfile.TemporaryDirectory() as d:
        tarfile.open("tests/data/tokenizers.tar.xz").extractall(d)
        for name, expected in golden.items():
            tokenizer = Tokenizer.from_file(f"{d}/{name}/tokenizer.json")
            for i, text in enumerate(texts):
                ids = tokenizer.encode(text, add_special_tokens=False).ids
                decoded = tokenizer.decode(ids, skip_special_tokens=False) if ids else ""
                if ids != expected["ids"][i] or decoded != expected["decoded"][i]:
                    differences += 1
                    print(f"{name} text {i}: ids {ids == expected['ids'][i]}, decoded {decoded == expected['decoded'][i]}: "
                          f"{ids} {decoded!r}")
            print(f"{name}: {len(texts)} texts checked")
    print(f"{differences} differences")
    sys.exit(1 if differences else 0)


def main():
    if "--real" in sys.argv:
        return check_real()
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
