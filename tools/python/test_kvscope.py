"""`import kvscope` against the CLI on the same inputs, on lavapipe or any device.

    PYTHONPATH=build/python KVSCOPE_BIN=build/bin python3 -m pytest -q tools/python

The module and `kvscope` must give the same selections bit for bit and the
same metrics; bad input must raise ValueError, never crash.
"""
import json
import os
import struct
import subprocess
import sys
import tarfile
import tempfile

import numpy as np
import pytest

import kvscope

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "figures"))
import kvscope_figures  # noqa: E402
CAPTURE = os.path.join(ROOT, "assets", "real-passkey-4k.safetensors")
KVSCOPE = os.path.join(os.environ.get("KVSCOPE_BIN", os.path.join(ROOT, "build", "bin")), "kvscope")


def cli(*args):
    result = subprocess.run([KVSCOPE, *args], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def read_safetensors(path):
    with open(path, "rb") as f:
        header_size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(header_size))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = {"I32": "<i4", "F32": "<f4"}[info["dtype"]]
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(info["shape"])
    return tensors


@pytest.fixture(scope="module")
def capture():
    return kvscope.Capture.open(CAPTURE)


def test_the_issue_one_liner(capture):
    records = kvscope.evaluate(capture, ["quest", "fier"], ["3%"], "decode")
    assert {(r["layer"], r["method"]) for r in records} == {(l, m) for l in capture.layers for m in ("quest", "fier")}
    for r in records:
        assert r["budget"] == round(0.03 * capture.tokens)
        assert 0 <= r["coverage"] <= 1 and 0 <= r["recall"] <= 1 and r["output_error"] >= 0
        assert r["gpu_ms"] and all(ms >= 0 for ms in r["gpu_ms"].values())


@pytest.mark.parametrize("method,regime,options", [
    ("quest", "decode", {"page_size": 8}),
    ("fier", "decode", {"gqa_agg": "max"}),
    ("quoka", "prefill", {"n_q": 8}),
    ("streaming", "prefill", {}),
])
def test_select_is_the_cli_selection(capture, method, regime, options):
    got = kvscope.select(capture, 4, method, 64, regime, probes=8, chunk=64, chunks=3, **options)
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in options.items()]
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "sel.safetensors")
        cli("select", "--capture", CAPTURE, "--layer", "4", "--method", method, "--budget", "64", f"--{regime}",
            "--probes", "8", "--chunk", "64", "--chunks", "3", "--out", out, *flags)
        want = read_safetensors(out)
    assert got["indices"].dtype == np.int32 and got["indices"].shape == want["indices"].shape
    assert np.array_equal(got["indices"], want["indices"])
    assert np.array_equal(got["block_pos"], want["block_pos"])


def test_evaluate_is_the_cli_eval(capture):
    records = kvscope.evaluate(capture, ["dense", "quest", "sparq"], [32, "5%"], "decode", layers=[0], probes=4)
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "e.json")
        cli("eval", "--capture", CAPTURE, "--layers", "0", "--methods", "dense,quest,sparq", "--budgets", "32,5%",
            "--decode", "--probes", "4", "--json", out)
        with open(out) as f:
            want = json.load(f)
    assert len(records) == len(want)
    for got, row in zip(records, want):
        assert (got["method"], got["budget"], got["layer"]) == (row["method"], row["budget"], row["layer"])
        for key in ("coverage", "recall", "output_error"):
            assert got[key] == row[key], key
        assert got["needle_recall"] == row.get("needle_recall")


def random_qkv(rng, heads, kv_heads, tokens, dim):
    return (rng.standard_normal((heads, tokens, dim)), rng.standard_normal((kv_heads, tokens, dim)),
            rng.standard_normal((kv_heads, tokens, dim)))


@pytest.mark.parametrize("heads,kv_heads,tokens,dim,dtype", [
    (4, 4, 300, 64, "f16"),   # MHA
    (8, 2, 300, 32, "bf16"),  # GQA
    (4, 1, 200, 64, "f32"),   # MQA
    (2, 1, 1, 32, "f16"),     # T = 1
])
def test_arrays_select_as_their_saved_file(heads, kv_heads, tokens, dim, dtype):
    rng = np.random.default_rng()
    q, k, v = random_qkv(rng, heads, kv_heads, tokens, dim)
    capture = kvscope.Capture.from_arrays(q, k, v, dtype=dtype)
    assert capture.tokens == tokens and capture.shape(0) == {"heads": heads, "kv_heads": kv_heads, "tokens": tokens,
                                                             "dim": dim}
    got = kvscope.select(capture, 0, "quest", 16, "decode", probes=4, page_size=4)
    with tempfile.TemporaryDirectory() as folder:
        path, out = os.path.join(folder, "c.safetensors"), os.path.join(folder, "s.safetensors")
        capture.save(path)
        cli("select", "--capture", path, "--layer", "0", "--method", "quest", "--budget", "16", "--decode",
            "--probes", "4", "--page-size", "4", "--out", out)
        want = read_safetensors(out)
    assert np.array_equal(got["indices"], want["indices"])


def test_non_contiguous_arrays_are_their_copies():
    rng = np.random.default_rng()
    q = rng.standard_normal((64, 2, 32)).astype(np.float32).transpose(1, 0, 2)  # [2, 64, 32], strided
    k = rng.standard_normal((32, 64, 1)).astype(np.float32).transpose(2, 1, 0)  # [1, 64, 32]
    v = rng.standard_normal((1, 64, 32)).astype(np.float32)
    strided = kvscope.Capture.from_arrays(q, k, v)
    copied = kvscope.Capture.from_arrays(np.ascontiguousarray(q), np.ascontiguousarray(k), v)
    a = kvscope.select(strided, 0, "fier", 8, "decode", probes=4)
    b = kvscope.select(copied, 0, "fier", 8, "decode", probes=4)
    assert np.array_equal(a["indices"], b["indices"])


def test_bad_input_raises_value_error(capture):
    rng = np.random.default_rng()
    q, k, v = random_qkv(rng, 4, 2, 16, 32)
    with pytest.raises(ValueError, match="rank"):
        kvscope.Capture.from_arrays(q[0], k, v)
    with pytest.raises(ValueError, match="agree"):
        kvscope.Capture.from_arrays(q, k[:, :8], v)
    with pytest.raises(ValueError, match="multiple"):
        kvscope.Capture.from_arrays(q[:3], k, v)
    q[1, 3, 5] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        kvscope.Capture.from_arrays(q, k, v)
    with pytest.raises(ValueError, match="page_size"):
        kvscope.select(capture, 0, "quest", 16, "decode", page_sise=8)
    with pytest.raises(ValueError):
        kvscope.select(capture, 0, "quest", 16, "sideways")
    with pytest.raises(ValueError):
        kvscope.select(capture, 0, "no_such_method", 16, "decode")
    with pytest.raises(ValueError):
        kvscope.select(capture, 7, "quest", 16, "decode")
    with pytest.raises(ValueError):
        kvscope.evaluate(capture, ["quest"], ["150%"], "decode")
    with pytest.raises(ValueError):
        kvscope.Capture.open(os.path.join(ROOT, "README.md"))


def test_devices_and_a_named_device(capture):
    devices = kvscope.devices()
    assert devices and all({"index", "name", "type", "supported"} <= set(d) for d in devices)
    device = kvscope.Device(0)
    got = kvscope.select(capture, 0, "quest", 32, "decode", probes=2, device=device)
    assert got["indices"].shape[0] == 2


def test_methods_are_the_table():
    methods = {m["name"]: m for m in kvscope.methods()}
    assert {"quest", "fier", "quoka", "streaming", "oracle"} <= set(methods)
    assert methods["quest"]["options"] == {"page_size": "16", "gqa_agg": "head"}
    assert methods["snapkv"]["model_runs_it"] is False and methods["quest"]["model_runs_it"] is True
    help_text = cli("eval", "--help")
    for name, method in methods.items():
        assert method["summary"] in help_text, name


STORIES = os.path.join(ROOT, "assets", "models", "stories260K", "stories260K.bin")
DEBIAN5M = os.path.join(ROOT, "assets", "models", "llama-debian-5m")


@pytest.mark.parametrize("plan,flags", [
    ({}, []),
    ({"method": "quest", "budget": 16, "page_size": 4}, ["--method", "quest", "--budget", "16", "--page-size", "4"]),
    ({"prefill_method": "quoka", "prefill_budget": 8, "n_q": 4, "chunk": 8},
     ["--prefill-method", "quoka", "--prefill-budget", "8", "--n-q", "4", "--chunk", "8"]),
])
def test_model_generate_is_the_cli_generate(plan, flags):
    model = kvscope.Model(STORIES)
    assert model.config["layers"] == 5 and model.config["vocab"] == 512
    prompt = "Once upon a time, Lily found a red ball in the park. She"
    got = model.generate(prompt, 48, **plan)
    with tempfile.TemporaryDirectory() as folder:
        out, logits = os.path.join(folder, "g.json"), os.path.join(folder, "l.safetensors")
        text = cli("generate", "--model", STORIES, "--prompt", prompt, "--steps", "48", "--json", out,
                   "--logits", logits, *flags)
        with open(out) as f:
            want = json.load(f)
        prompt_ids = read_safetensors(logits)["tokens"].tolist()
    assert got["ids"] == want["generated_ids"] and got["text"] == want["generated_text"]
    assert text == got["text"] + "\n"
    assert model.tokenize(prompt) == got["prompt_ids"] == prompt_ids
    assert model.detokenize(prompt_ids + got["ids"]) == model.detokenize(prompt_ids) + got["text"]
    assert got["selection"] == want["selection"]
    assert got["time_to_first_token_ms"] > 0 and set(got["gpu_ms_by_part"]) == set(want["gpu_ms_by_part"])


def test_model_needle_and_perplexity_are_the_cli_runs():
    model = kvscope.Model(DEBIAN5M)
    needle = model.needle(lengths=[160], depths=[0.5], methods=["dense", "streaming"], budgets=[32], n_sink=2)
    ppl = model.perplexity(length=128, scored=8, methods=["dense", "quest"], budgets=[32])
    with tempfile.TemporaryDirectory() as folder:
        needle_out, ppl_out = os.path.join(folder, "n.json"), os.path.join(folder, "p.json")
        cli("needle", "--model", DEBIAN5M, "--lengths", "160", "--depths", "0.5", "--methods", "dense,streaming",
            "--budgets", "32", "--n-sink", "2", "--json", needle_out)
        cli("ppl", "--model", DEBIAN5M, "--length", "128", "--scored", "8", "--methods", "dense,quest",
            "--budgets", "32", "--json", ppl_out)
        with open(needle_out) as f:
            want_needle = json.load(f)
        with open(ppl_out) as f:
            want_ppl = json.load(f)
        # The figures from the module's results and from the CLI's files.
        assert kvscope_figures.needle_figure(needle).axes and kvscope_figures.ppl_figure(ppl).axes
        cli_figures(folder, "needle", needle_out)
        cli_figures(folder, "ppl", ppl_out)
    assert needle["results"] == want_needle["results"] and needle["options"] == want_needle["options"]
    assert ppl["results"] == want_ppl["results"] and len(ppl["results"]) == 3


def test_model_ruler_is_the_cli_ruler():
    model = kvscope.Model(DEBIAN5M)
    got = model.ruler(tasks=["niah_single_1"], lengths=[400], samples=1, methods=["dense", "quest"], budgets=[32],
                      tokens_to_generate=4)
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "r.json")
        cli("ruler", "--model", DEBIAN5M, "--tasks", "niah_single_1", "--lengths", "400", "--samples", "1",
            "--methods", "dense,quest", "--budgets", "32", "--tokens-to-generate", "4", "--json", out)
        with open(out) as f:
            want = json.load(f)
        assert kvscope_figures.ruler_figure(got).axes
        cli_figures(folder, "ruler", out)
    assert got["results"] == want["results"] and len(got["results"]) == 2
    assert got["tasks"] == ["niah_single_1"] and 0 <= got["results"][0]["score"] <= 100


def test_model_ruler_on_rulers_files_is_the_cli_ruler():
    data = os.path.join(ROOT, "tests", "data", "ruler")
    model = kvscope.Model(DEBIAN5M)
    got = model.ruler(data=data, tasks=["qa_1"], methods=["dense"], tokens_to_generate=4)
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "r.json")
        cli("ruler", "--model", DEBIAN5M, "--data", data, "--tasks", "qa_1", "--methods", "dense",
            "--tokens-to-generate", "4", "--json", out)
        with open(out) as f:
            want = json.load(f)
    assert got["results"] == want["results"] and len(got["results"]) == 1
    with pytest.raises(ValueError, match="lengths is for generated prompts"):
        model.ruler(data=data, lengths=[4096])


def cli_figures(folder, kind, results):
    out = os.path.join(folder, kind + ".png")
    script = os.path.join(ROOT, "tools", "figures", "kvscope_figures.py")
    done = subprocess.run([sys.executable, script, kind, results, out], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_figures_of_records_and_refusals(capture):
    records = kvscope.evaluate(capture, ["dense", "quest", "streaming"], [16, 64], "decode", probes=2)
    assert len(kvscope_figures.recall_figure(records).axes) == 2
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "records.json")
        with open(path, "w") as f:
            json.dump(records, f)
        cli_figures(folder, "recall", path)
        script = os.path.join(ROOT, "tools", "figures", "kvscope_figures.py")
        wrong = subprocess.run([sys.executable, script, "needle", path, os.path.join(folder, "n.png")],
                               capture_output=True, text=True)
        assert wrong.returncode != 0 and "not needle results" in wrong.stderr
        assert not os.path.exists(os.path.join(folder, "n.png"))


def test_stubs_name_every_method_and_option():
    import ast
    stubs = os.path.join(os.path.dirname(kvscope.__file__), "kvscope.pyi")
    with open(stubs) as f:
        text = f.read()
    tree = ast.parse(text)
    functions = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    for name in ("select", "evaluate", "generate", "needle", "perplexity"):
        keywords = {a.arg for a in functions[name].args.kwonlyargs}
        assert {o["keyword"] for o in kvscope.options()} <= keywords, name
    for method in kvscope.methods():
        assert repr(method["name"]) in text


def test_model_chat_wraps_the_prompt_as_the_cli_does():
    plain, chat = kvscope.Model(DEBIAN5M), kvscope.Model(DEBIAN5M, chat="chatml")
    wrapped = plain.generate("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", 2)
    assert chat.generate("hi", 2)["ids"] == wrapped["ids"]
    with pytest.raises(ValueError, match="chat_template"):
        kvscope.Model(DEBIAN5M, chat=True)  # llama-debian-5m has no chat template
    with pytest.raises(ValueError, match="chat format"):
        kvscope.Model(DEBIAN5M, chat="alpaca")


def test_model_bad_input_raises_value_error():
    model = kvscope.Model(STORIES)
    with pytest.raises(ValueError, match="budget"):
        model.generate("Once", 4, method="quest")
    with pytest.raises(ValueError, match="page_size"):
        model.generate("Once", 4, method="quest", budget=8, page_sise=4)
    with pytest.raises(ValueError):
        model.generate("Once", 4, method="snapkv", budget=8)  # reads every past query
    with pytest.raises(ValueError):
        model.generate("Once", 100000)  # past the model's context
    with pytest.raises(ValueError):
        model.generate("Once", 4, temperature=-1.0)
    with pytest.raises(ValueError, match="chunk"):
        model.generate("Once", 4, chunk=0)
    with pytest.raises(ValueError):
        model.needle(lengths=[10])
    with pytest.raises(ValueError):
        model.perplexity(length=100, scored=200)
    with pytest.raises(ValueError):
        kvscope.Model(os.path.join(ROOT, "README.md"))
    shape = os.path.join(ROOT, "assets", "shapes", "llama-3.2-1b.json")
    random = kvscope.Model(shape, random_weights=True)
    assert random.config["layers"] == 16
    with pytest.raises(ValueError, match="tokenizer"):
        random.needle(lengths=[256])


# Text and token ids over the three tokenizer families the tests ship
# (tests/data/tokenizers.tar.xz: Mistral-7B's SentencePiece-style BPE with
# byte fallback, Llama 3.1's and Qwen3's byte-level BPE), each behind a tiny
# model with random weights of its vocabulary: every id decodes, and
# generation draws ids that stop inside characters.
FAMILIES = {
    "llama2": {"architectures": ["LlamaForCausalLM"], "vocab_size": 32000, "bos_token_id": 1, "eos_token_id": 2},
    "llama3_1": {"architectures": ["LlamaForCausalLM"], "vocab_size": 128256, "bos_token_id": 128000,
                 "eos_token_id": [128001, 128008, 128009]},
    "qwen3": {"architectures": ["Qwen3ForCausalLM"], "vocab_size": 151936, "bos_token_id": 151643,
              "eos_token_id": 151645, "head_dim": 32},
}
CORPUS = os.path.join(ROOT, "tests", "data", "tokenizer_corpus.json")


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    """Each family's folder (tokenizer.json, tokenizer_config.json) and a tiny config.json of its vocabulary."""
    folder = tmp_path_factory.mktemp("tokenizers")
    with tarfile.open(os.path.join(ROOT, "tests", "data", "tokenizers.tar.xz")) as tar:
        tar.extractall(folder)
    out = {}
    for name, special in FAMILIES.items():
        config = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 2,
                  "num_key_value_heads": 1, "max_position_embeddings": 4096, "rms_norm_eps": 1e-6,
                  "rope_theta": 10000.0, "tie_word_embeddings": True, **special}
        path = folder / f"{name}.json"
        path.write_text(json.dumps(config))
        out[name] = (str(path), str(folder / name / "tokenizer.json"))
    return out


def family_model(families, name, **kwargs):
    config, tokenizer = families[name]
    return kvscope.Model(config, random_weights=True, tokenizer=tokenizer, **kwargs)


def gpt2_byte_symbols():
    """GPT-2's bytes_to_unicode: the character that stands for each byte in a byte-level vocabulary."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    extra = iter(range(256, 512))
    return {b: chr(b if b in printable else next(extra)) for b in range(256)}


class TokenBytes:
    """A family's tokens as the bytes Hugging Face's decoders give them, from tokenizer.json alone: the
    reference Model.detokenize is held to (its text is these bytes as Python's errors="replace" decodes them)."""

    def __init__(self, tokenizer_json, name):
        with open(tokenizer_json, encoding="utf-8") as f:
            j = json.load(f)
        self.byte_level = name != "llama2"
        self.piece = {i: p for p, i in j["model"]["vocab"].items()}
        self.piece.update({t["id"]: t["content"] for t in j["added_tokens"]})
        self.added = {t["id"] for t in j["added_tokens"]}
        if self.byte_level:
            self.byte_of = {c: b for b, c in gpt2_byte_symbols().items()}
            self.id_of_byte = {b: j["model"]["vocab"][c] for b, c in gpt2_byte_symbols().items()}
        else:
            self.id_of_byte = {b: j["model"]["vocab"][f"<0x{b:02X}>"] for b in range(256)}

    def of(self, ids):
        out = b""
        for k, i in enumerate(ids):
            piece = self.piece[i]
            if i in self.added:
                out += piece.encode()
            elif self.byte_level:
                out += bytes(self.byte_of[c] for c in piece)
            elif piece.startswith("<0x") and len(piece) == 6:
                out += bytes([int(piece[3:5], 16)])
            else:  # Replace "▁" with " ", and Strip one space from the start of the text
                text = piece.replace("\u2581", " ")
                out += (text[1:] if k == 0 and text.startswith(" ") else text).encode()
        return out


# Bytes that are not all UTF-8, each with its cause; Python's decode is the reference for each.
CRAFTED = [
    b"caf\xc3", b"\xe2\x82", b"\xf0\x9f\x8e", b"\xc3\xa9\xe2",  # a 2-, 3- and 4-byte character cut at the end
    b"a\x80b", b"\xbf\xbf",                                       # lone continuation bytes
    b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xf0\x80\x80\xaf",  # overlong forms
    b"\xed\xa0\x80", b"\xed\xbf\xbf",                            # surrogates in UTF-8
    b"\xf4\x90\x80\x80", b"\xf5\x80", b"\xf8\x88\x80\x80\x80", b"\xfe\xff", b"\xff",  # past U+10FFFF, F5-FF
    b"\xe2(\xa1", b"\xe2\x82(", b"\xf0(\x8c(",                    # cut by ASCII
    "€ \uffff \U0010ffff 🎉".encode(),                            # valid: kept
]


@pytest.mark.parametrize("name", FAMILIES)
def test_detokenize_replaces_bytes_as_python_does(families, name):
    model = family_model(families, name)
    tokens = TokenBytes(families[name][1], name)
    x = model.tokenize("x", add_special=False)
    assert tokens.of(x) == b"x"
    rng = np.random.default_rng()
    # Random bytes, mostly from those that lead, continue or never occur in UTF-8.
    pool = np.array([0x61, 0x28, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xed,
                     0xef, 0xf0, 0xf3, 0xf4, 0xf5, 0xff], dtype=np.uint8)
    drawn = [bytes(rng.choice(pool, rng.integers(1, 10))) for _ in range(300)]
    drawn += [bytes(rng.integers(0, 256, rng.integers(1, 10), dtype=np.uint8)) for _ in range(100)]
    for data in CRAFTED + drawn:
        ids = x + [tokens.id_of_byte[b] for b in data]  # after "x": no decoder strips the bytes' first space
        assert model.detokenize(ids) == "x" + data.decode("utf-8", errors="replace"), data


@pytest.mark.parametrize("name", FAMILIES)
def test_ids_that_split_a_character(families, name):
    model = family_model(families, name)
    tokens = TokenBytes(families[name][1], name)
    with open(CORPUS, encoding="utf-8") as f:
        texts = json.load(f)
    cut_inside = 0
    for text in texts + ["Grüße 日本 𝔘𝔫 🧗\u200d♀ ok"]:
        ids = model.tokenize(text, add_special=False)
        assert model.detokenize(ids) == tokens.of(ids).decode("utf-8", errors="replace")
        for n in range(len(ids)):
            data = tokens.of(ids[:n])
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                cut_inside += 1
            assert model.detokenize(ids[:n]) == data.decode("utf-8", errors="replace"), (text, n)
    assert cut_inside > 10


# A random model with tied embeddings answers its prompt's last token again and
# again: a prompt that ends in part of a character gives text that does too.
@pytest.mark.parametrize("name,chat,prompt", [
    ("llama2", None, "Grüße aus 日本 𝔘"),  # 𝔘 as 4 byte-fallback tokens: the answer repeats the last, a 0x98
    ("qwen3", None, "Grüße aus 日本 𝔘"),   # 𝔘's last token is its last 2 bytes, as in the issue's draw
    ("llama3_1", None, "Grüße aus 日本 東".encode()[:-1]),  # a prompt that stops inside 東: so does the answer
    ("llama2", "inst", "Grüße aus 日本 𝔘"),  # a chat format's text and special tokens
])
def test_text_and_ids_are_the_cli_generate(families, name, chat, prompt):
    """tokenize is the CLI's --logits tokens and generate's prompt_ids; generate's ids and text are the CLI's
    (stdout and --json), its text the generated tokens' bytes as Python's errors="replace" decodes them, also
    where they stop inside a character; detokenize gives the same text."""
    config, tokenizer = families[name]
    model = family_model(families, name, chat=chat)
    tokens = TokenBytes(tokenizer, name)
    got = model.generate(prompt, 2)
    with tempfile.TemporaryDirectory() as folder:
        out, logits = os.path.join(folder, "g.json"), os.path.join(folder, "l.safetensors")
        printed = subprocess.run([KVSCOPE, "generate", "--model", config, "--random-weights", "--tokenizer", tokenizer,
                                  "--prompt", prompt, "--steps", "2", "--json", out, "--logits", logits,
                                  *(["--chat-format", chat] if chat else [])], capture_output=True)
        assert printed.returncode == 0, printed.stderr
        with open(out, encoding="utf-8") as f:
            want = json.load(f)
        prompt_ids = read_safetensors(logits)["tokens"].tolist()
    assert model.tokenize(prompt) == got["prompt_ids"] == prompt_ids
    assert got["ids"] == want["generated_ids"] and got["text"] == want["generated_text"]
    assert printed.stdout.decode("utf-8") == got["text"] + "\n"  # stdout is UTF-8, as the text
    before = tokens.of(prompt_ids)
    generated = tokens.of(prompt_ids + got["ids"])[len(before):]
    assert got["text"] == generated.decode("utf-8", errors="replace")
    if not chat:  # the answer is bytes that Python's strict decode refuses
        with pytest.raises(UnicodeDecodeError):
            generated.decode("utf-8")
    if isinstance(prompt, str):  # a whole text before them: its text, then theirs
        assert model.detokenize(prompt_ids + got["ids"]) == model.detokenize(prompt_ids) + got["text"]


def test_tokenize_chat_and_special_tokens(families):
    plain, chat = family_model(families, "qwen3"), family_model(families, "qwen3", chat=True)
    wrapped = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert chat.tokenize("hi") == plain.tokenize("hi", chat=True) == plain.tokenize("hi", chat="chatml")
    assert chat.tokenize("hi") == plain.tokenize(wrapped)
    assert chat.tokenize("hi", chat=False) == plain.tokenize("hi")
    assert plain.detokenize(plain.tokenize(wrapped, add_special=False)) == wrapped  # special tokens as their text
    llama = family_model(families, "llama3_1")
    assert llama.tokenize("hi") == [128000] + llama.tokenize("hi", add_special=False)
    assert llama.detokenize(llama.tokenize("hi")) == "<|begin_of_text|>hi"
    assert llama.tokenize("") == [128000] and llama.detokenize([]) == ""
    # Bytes are UTF-8 that may be cut: the CLI's --prompt takes them as they are.
    assert llama.detokenize(llama.tokenize(b"caf\xc3", add_special=False)) == "caf\ufffd"
    with pytest.raises(ValueError, match="chat format"):
        plain.tokenize("hi", chat="alpaca")
    with pytest.raises(ValueError, match="chat"):
        plain.tokenize("hi", chat=1)


def test_detokenize_bad_ids_raise_value_error(families):
    model = family_model(families, "qwen3")
    assert model.detokenize(np.array([9707, 11, 1879], dtype=np.int64)) == model.detokenize([9707, 11, 1879])
    assert model.detokenize([151935]) == ""  # a padding row of the model: no text, as tokenizers decodes it
    for bad in ([-1], [151936], [2 ** 40], [1.0], ["1"], [True], [None], "12", 12, None, [[1, 2]],
                np.array([[1, 2], [3, 4]])):
        with pytest.raises(ValueError, match="ids"):
            model.detokenize(bad)
    with pytest.raises(ValueError, match="outside the model's vocabulary"):
        model.detokenize([5, 151936])
