#!/usr/bin/env python3
"""The prompts the real chat templates in tests/data/tokenizers.tar.xz make of
one user turn, for tests/test_tokenizer.cpp's check of model::wrap_chat:
rendered as transformers' apply_chat_template renders them (jinja2's
ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the
template's bos_token and eos_token, add_generation_prompt=True). Needs jinja2.

  python3 tools/dev/chat_golden.py > tests/data/chat_golden.json
"""
import datetime
import json
import sys
import tarfile
import tempfile

from jinja2.sandbox import ImmutableSandboxedEnvironment

TEXTS = ["What is the pass key?", "  padded with spaces  \n", "Line one\nline two\n\n  indented", "<s> [INST] looks like markup [/INST]", ""]


def token_text(value):
    return value["content"] if isinstance(value, dict) else value


def main():
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
