"""Tests of tools/export/capture_qkv.py: tiny randomly initialised models of each family
(built from their config classes, no weights or network), captured, self-checked,
and read back by the engine. Needs PyTorch and transformers; the engine checks
need KVSCOPE_BIN (the directory holding the kvscope binary) and a Vulkan device.

    KVSCOPE_BIN=build/bin python3 -m pytest -q tools/export
"""
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import capture_qkv  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
SMALL = dict(vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=3, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=1024)


def family_configs():
    from transformers import (Gemma2Config, GemmaConfig, LlamaConfig, MistralConfig, Qwen2Config,
                              Qwen3Config)

    return {
        "llama": LlamaConfig(**SMALL, head_dim=32),
        "smollm": LlamaConfig(**SMALL, head_dim=32, tie_word_embeddings=True),  # SmolLM is a Llama
        "mistral": MistralConfig(**SMALL, head_dim=32, sliding_window=None),
        "qwen2": Qwen2Config(**SMALL),
        "qwen3": Qwen3Config(**SMALL, head_dim=32),
        "gemma": GemmaConfig(**SMALL, head_dim=32),
        # query_pre_attn_scalar makes the logit scale differ from 1/sqrt(d): it must reach the metadata.
        "gemma2": Gemma2Config(**SMALL, head_dim=32, query_pre_attn_scalar=64, attn_logit_softcapping=None,
                               final_logit_softcapping=None, sliding_window=4096),
    }


def tiny_model(config, dtype=torch.float32):
    capture_qkv.register_attention()
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation=capture_qkv.ATTENTION_NAME)
    return model.to(device=DEVICE, dtype=dtype).eval()


def run_engine(*args):
    binary = os.environ.get("KVSCOPE_BIN")
    if not binary:
        pytest.skip("KVSCOPE_BIN is not set: the engine's reader is not checked")
    return subprocess.run([os.path.join(binary, "kvscope"), *args], capture_output=True, text=True)


@pytest.mark.parametrize("family", list(family_configs()))
def test_family_capture_self_checks_and_engine_reads_it(family, tmp_path):
    config = family_configs()[family]
    dtype = torch.float16 if family in ("llama", "qwen3") and DEVICE == "cuda" else torch.float32
    model = tiny_model(config, dtype)
    ids = torch.randint(0, config.vocab_size, (300,))
    texts = [f"t{int(i)} " for i in ids]
    tensors, metadata, errors = capture_qkv.capture(model, ids, [0, 2], texts, family, "test")
    assert max(errors.values()) <= 1e-2, errors
    assert tensors["layers.0.q"].shape == (4, 300, 32 if family != "qwen2" else 32)
    assert tensors["layers.2.k"].shape[0] == 2
    assert tensors["layers.0.q"].dtype == dtype
    if family == "gemma2":
        assert abs(float(metadata["scale"]) - 64 ** -0.5) < 1e-6
    else:
        assert "scale" not in metadata
    path = str(tmp_path / f"{family}.safetensors")
    capture_qkv.write_capture(path, tensors, metadata)
    info = run_engine("info", path)
    assert info.returncode == 0, info.stderr
    assert "300" in info.stdout and family in info.stdout
    check = run_engine("dense", "--capture", path, "--layer", "2", "--decode", "--probes", "4", "--check")
    assert check.returncode == 0, check.stdout + check.stderr


def test_self_check_refuses_softcapped_logits(tmp_path):
    from transformers import Gemma2Config

    config = Gemma2Config(**SMALL, head_dim=32, attn_logit_softcapping=1.0, final_logit_softcapping=None)
    model = tiny_model(config)
    with pytest.raises(capture_qkv.CaptureError, match="soft-caps"):
        capture_qkv.capture(model, torch.randint(0, 512, (64,)), [0], None, "gemma2", "test")


def test_self_check_refuses_a_sliding_window_shorter_than_the_prompt():
    from transformers import MistralConfig

    model = tiny_model(MistralConfig(**SMALL, head_dim=32, sliding_window=16))
    with pytest.raises(capture_qkv.CaptureError, match="sliding window"):
        capture_qkv.capture(model, torch.randint(0, 512, (200,)), [0], None, "mistral", "test")


def test_all_layers_and_bad_layer_list():
    assert capture_qkv.parse_layers("all", 3) == [0, 1, 2]
    assert capture_qkv.parse_layers("2,0,2", 3) == [0, 2]
    with pytest.raises(capture_qkv.CaptureError):
        capture_qkv.parse_layers("5", 3)


def word_tokenizer():
    """A word-level fast tokenizer built in memory, standing in for a real model's."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = (capture_qkv.PASSKEY_INTRO + capture_qkv.PASSKEY_FILLER + capture_qkv.PASSKEY_QUESTION +
             " The pass key is Remember it . is the pass key the quick brown fox jumps over lazy dog secret "
             "word magic number").replace(".", " . ").replace("?", " ? ").split()
    vocab = {"[UNK]": 0}
    for w in words:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")


def test_passkey_prompt_places_the_needle_and_records_its_span(tmp_path):
    tokenizer = word_tokenizer()
    text, ids, (start, end) = capture_qkv.passkey_prompt(tokenizer, 600, 0.25, passkey=12345)
    assert len(ids) <= 600 and len(ids) > 500
    assert 0.15 * len(ids) < start < 0.35 * len(ids)
    assert tokenizer.decode(ids[start:end]).startswith("The pass key is")
    model = tiny_model(family_configs()["llama"])
    tensors, metadata, _ = capture_qkv.capture(model, torch.tensor(ids), [1], capture_qkv.token_texts_of(tokenizer, ids),
                                               "llama", "test", (start, end))
    assert metadata["needle_span"] == f"{start},{end}"
    path = str(tmp_path / "passkey.safetensors")
    capture_qkv.write_capture(path, tensors, metadata)
    result = run_engine("eval", "--capture", path, "--decode", "--probes", "2", "--budgets", "64")
    assert result.returncode == 0, result.stderr
    assert f"needle tokens [{start}, {end})" in result.stdout


def test_needle_prompt_over_a_haystack():
    tokenizer = word_tokenizer()
    haystack = "the quick brown fox jumps over the lazy dog . " * 200
    text, ids, (start, end) = capture_qkv.needle_prompt(tokenizer, haystack, "the magic number is secret word .", 300,
                                                       0.5, " what is the magic number ?")
    assert len(ids) <= 300
    assert "magic number is secret word" in tokenizer.decode(ids[start:end])
    assert 0.3 * len(ids) < start < 0.7 * len(ids)


def test_command_line_refuses_bad_input_with_one_line(tmp_path):
    out = tmp_path / "x.safetensors"
    result = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "capture_qkv.py"),
                             "--model", str(tmp_path / "no-such-model"), "--out", str(out), "--prompt", "hi"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not out.exists()


def test_command_line_on_a_local_safetensors_checkpoint(tmp_path):
    checkpoint = tmp_path / "tiny-llama"
    tiny_model(family_configs()["llama"]).save_pretrained(checkpoint, safe_serialization=True)
    word_tokenizer().save_pretrained(checkpoint)
    assert any(p.suffix == ".safetensors" for p in checkpoint.iterdir())
    out = tmp_path / "passkey.safetensors"
    result = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "capture_qkv.py"),
                             "--model", str(checkpoint), "--out", str(out), "--layers", "0,2", "--passkey",
                             "--length", "400", "--depth", "0.5", "--device", DEVICE],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "needle tokens" in result.stdout
    info = run_engine("info", str(out))
    assert info.returncode == 0, info.stderr
    assert "F32" in info.stdout and "layers    2" in info.stdout
