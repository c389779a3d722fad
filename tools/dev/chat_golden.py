#!/usr/bin/env python3
"""The prompts the real chat templates in tests/data/tokenizers.tar.xz make of
one user turn, for tests/test_tokenizer.cpp's check of model::wrap_chat:
rendered as transformers' apply_chat_template renders them (jinja2's
ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the
template's bos_token and eos_token, add_generation_prompt=True). Needs jinja2.

  python3 tools/dev/chat_golden.py > tests/data/chat_golden.json

With --check (where transformers is installed: the GPU machine) it renders
the same turns through transformers' own apply_chat_template instead and
compares them with tests/data/chat_golden.json, exiting 1 on a difference.
"""
import datetime
import json
import sys
import tarfile
import tempfile


TEXTS = ["What is the pass key?", "  padded with spaces  \n", "Line one\nline two\n\n  indented", "<s> [INST] looks like markup [/INST]", ""]


def token_text(value):
    return value["content"] if isinstance(value, dict) else value


def check():
    from transformers import AutoTokenizer

    golden = json.load(open("tests/data/chat_golden.json"))
    differences = 0
    with tempfile.TemporaryDirectory() as d:
        tarfile.open("tests/data/tokenizers.tar.xz").extractall(d)
        for name, g in golden.items():
            tokenizer = AutoTokenizer.from_pretrained(f"{d}/{name}")
            for text, want in zip(g["texts"], g["prompts"]):
                got = tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                                    add_generation_prompt=True)
                if got != want:
                    differences += 1
                    print(f"{name}: {text!r}: transformers {got!r}, golden {want!r}")
            print(f"{name}: {len(g['texts'])} turns checked")
    print(f"{differences} differences")
    sys.exit(1 if differences else 0)


def main():
    if "--check" in sys.argv:
        return check()
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    out = {}
    with tempfile.TemporaryDirectory() as d:
        tarfile.open("tests/data/tokenizers.tar.xz").extractall(d)
        for name in ["llama3_1", "qwen3"]:
            config = json.load(open(f"{d}/{name}/tokenizer_config.json"))
            env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
            env.globals["raise_exception"] = lambda message: (_ for _ in ()).throw(Exception(message))
            env.globals["strftime_now"] = lambda f: datetime.datetime(2026, 12, 6).strftime(f)
            template = env.from_string(config["chat_template"])
            bos, eos = token_text(config.get("bos_token")), token_text(config.get("eos_token"))
            out[name] = {"bos_token": bos, "prompts": [
                template.render(messages=[{"role": "user", "content": t}], add_generation_prompt=True,
                                bos_token=bos, eos_token=eos) for t in TEXTS], "texts": TEXTS}
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    print()


if __name__ == "__main__":
    main()
