"""`import kvscope` against the CLI on the same inputs, on lavapipe or any device.

    PYTHONPATH=build/python KVSCOPE_BIN=build/bin python3 -m pytest -q tools/python

The module and `kvscope` must give the same selections bit for bit and the
same metrics; bad input must raise ValueError, never crash.
"""
import json
import os
import struct
import subprocess
import tempfile

import numpy as np
import pytest

import kvscope

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
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
        assert info["dtype"] == "I32"
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype="<i4").reshape(info["shape"])
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
