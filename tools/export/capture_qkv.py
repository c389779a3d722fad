#!/usr/bin/env python3
"""Exports a kvscope capture (docs/capture.md) from a Hugging Face causal LM.

One forward pass over a prompt; Q and K after the model's own RoPE, and V, of the
layers asked, in the model's dtype, with token ids and token text. The attention
modules are hooked through transformers' AttentionInterface: the model runs its
own code, and a registered attention function records what reaches attention
before handing it to SDPA. Before writing, the capture checks itself: causal
attention recomputed from the recorded Q/K/V must match the module's output
(relative error at most 1e-2), else nothing is written.

Prompts: --prompt / --prompt-file, a passkey retrieval prompt (--passkey), or a
needle in a haystack over a text file (--haystack-file --needle). For the last
two the needle's token span goes into the metadata (`needle_span`: "start,end",
end exclusive), which `kvscope eval` reports as needle recall.

Models: a Hugging Face id (needs the hub or its cache), a local directory with
config.json and safetensors weights, or a GGUF file (--gguf-file, needs the
`gguf` package). Llama, Mistral, Qwen2/Qwen3, SmolLM and Gemma families are
tested (tools/export/test_capture_qkv.py).
"""
import argparse
import json
import math
import os
import random
import shlex
import sys

import torch

CAPTURE_FORMAT = "kvscope-capture/1"
ATTENTION_NAME = "kvscope_capture"
MAX_RELATIVE_ERROR = 1e-2


class CaptureError(Exception):
    """A capture that must not be written; the message is one line."""


class AttentionRecorder:
    """The registered attention function: records q, k, v and the output of chosen layers."""

    def __init__(self):
        self.layers = None  # None: every layer
        self.records = {}

    def __call__(self, module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        if kwargs.get("softcap"):
            # SDPA cannot soft-cap logits, and a capture cannot express it: running on would
            # silently compute a different model.
            raise CaptureError(f"the model soft-caps attention logits (softcap={kwargs['softcap']}), "
                               "which a capture cannot express")
        output, weights = sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling,
                                                 dropout=dropout, **kwargs)
        layer = getattr(module, "layer_idx", None)
        if layer is None:
            raise CaptureError("an attention module has no layer_idx; this model family is not supported")
        if self.layers is None or layer in self.layers:
            self.records[layer] = {
                "q": query[0].detach(), "k": key[0].detach(), "v": value[0].detach(),
                "out": output[0].detach(),  # [T, H, d]
                "scale": float(scaling) if scaling is not None else 1.0 / math.sqrt(query.shape[-1]),
                "sliding_window": kwargs.get("sliding_window"),
            }
        return output, weights


RECORDER = AttentionRecorder()


def register_attention():
    """Registers the recorder, and SDPA's mask builder under the same name: without it the model
    builds no mask for an unknown implementation and SDPA silently drops sliding windows."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(ATTENTION_NAME, RECORDER)
    AttentionMaskInterface.register(ATTENTION_NAME, sdpa_mask)


def causal_attention(q, k, v, scale):
    """Float32 causal attention, one head at a time: q [H, T, d], k and v [G, T, d] -> [T, H, d]."""
    heads, tokens, _ = q.shape
    group = heads // k.shape[0]
    mask = torch.ones(tokens, tokens, dtype=torch.bool, device=q.device).tril()
    out = torch.empty(tokens, heads, v.shape[-1], dtype=torch.float32, device=q.device)
    for h in range(heads):
        logits = (q[h].float() @ k[h // group].float().T) * scale
        logits = logits.masked_fill(~mask, float("-inf"))
        out[:, h] = torch.softmax(logits, dim=-1) @ v[h // group].float()
    return out


def self_check(records):
    """Relative error of recomputed attention against each layer's own output; raises above the bound."""
    errors = {}
    for layer, r in sorted(records.items()):
        recomputed = causal_attention(r["q"], r["k"], r["v"], r["scale"])
        reference = r["out"].float()
        error = (torch.linalg.norm(recomputed - reference) / torch.linalg.norm(reference).clamp_min(1e-30)).item()
        errors[layer] = error
        if not error <= MAX_RELATIVE_ERROR:
            why = ""
            if r["sliding_window"] and r["sliding_window"] < reference.shape[0]:
                why = f" (the layer uses a sliding window of {r['sliding_window']} tokens, shorter than the prompt)"
            raise CaptureError(f"self-check failed: layer {layer}: recomputed attention differs from the module's "
                               f"output by {error:.3g} relative (limit {MAX_RELATIVE_ERROR}){why}")
    return errors


def parse_layers(text, num_layers):
    if text == "all":
        return list(range(num_layers))
    layers = []
    for part in text.split(","):
        if part == "all":
            return list(range(num_layers))
        if not part.isdigit() or int(part) >= num_layers:
            raise CaptureError(f"--layers: '{part}' is not a layer of this model (it has {num_layers})")
        layers.append(int(part))
    return sorted(set(layers))


def capture(model, input_ids, layers, token_texts=None, model_name="", source="", needle_span=None):
    """Runs the model once over input_ids [T] and returns (tensors, metadata, self-check errors)."""
    if model.config._attn_implementation != ATTENTION_NAME:
        raise CaptureError(f"load the model with attn_implementation='{ATTENTION_NAME}' (see load_model)")
    RECORDER.layers = set(layers)
    RECORDER.records = {}
    with torch.no_grad():
        model(input_ids=input_ids[None].to(model.device), use_cache=False)
    missing = set(layers) - set(RECORDER.records)
    if missing:
        raise CaptureError(f"layers {sorted(missing)} never reached the attention hook")
    errors = self_check(RECORDER.records)

    tensors, scales = {}, set()
    for layer, r in sorted(RECORDER.records.items()):
        tensors[f"layers.{layer}.q"] = r["q"].contiguous().cpu()
        tensors[f"layers.{layer}.k"] = r["k"].contiguous().cpu()
        tensors[f"layers.{layer}.v"] = r["v"].contiguous().cpu()
        scales.add(r["scale"])
    if len(scales) != 1:
        raise CaptureError(f"layers use different logit scales {sorted(scales)}; capture them separately")
    tokens = input_ids.to(torch.int32).cpu()
    tensors["tokens"] = tokens
    if token_texts is not None:
        encoded = [t.encode("utf-8") for t in token_texts]
        offsets = [0]
        for e in encoded:
            offsets.append(offsets[-1] + len(e))
        tensors["token_text"] = torch.tensor(list(b"".join(encoded)), dtype=torch.uint8)
        tensors["token_offsets"] = torch.tensor(offsets, dtype=torch.int32)
    scale = scales.pop()
    metadata = {"format": CAPTURE_FORMAT, "model": model_name, "source": source}
    head_dim = tensors[f"layers.{layers[0]}.q"].shape[-1]
    if abs(scale - 1.0 / math.sqrt(head_dim)) > 1e-7:
        metadata["scale"] = repr(scale)
    if needle_span is not None:
        metadata["needle_span"] = f"{needle_span[0]},{needle_span[1]}"
    return tensors, metadata, errors


def write_capture(path, tensors, metadata):
    """Writes through a temporary file and a rename, so a failure leaves no partial file."""
    from safetensors.torch import save_file

    temporary = path + ".partial"
    try:
        save_file(tensors, temporary, metadata=metadata)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def load_model(name, gguf_file=None, dtype="auto", device="cuda"):
    from transformers import AutoModelForCausalLM

    register_attention()
    kwargs = {"attn_implementation": ATTENTION_NAME}
    if dtype != "auto":
        kwargs["dtype"] = getattr(torch, dtype)
    else:
        kwargs["dtype"] = "auto"
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    model = AutoModelForCausalLM.from_pretrained(name, **kwargs)
    return model.to(device).eval()


# ---- prompts -------------------------------------------------------------------------------

PASSKEY_INTRO = ("There is an important info hidden inside a lot of irrelevant text. Find it and memorize it. "
                 "I will quiz you about the important information there.\n")
PASSKEY_FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
PASSKEY_QUESTION = "\nWhat is the pass key? The pass key is"


def span_of(tokenizer, text, start_char, end_char):
    """Token positions [start, end) of the tokens that overlap characters [start_char, end_char)."""
    encoded = tokenizer(text, return_offsets_mapping=True, add_special_tokens=True)
    ids, offsets = encoded["input_ids"], encoded["offset_mapping"]
    inside = [i for i, (a, b) in enumerate(offsets) if b > start_char and a < end_char and b > a]
    if not inside:
        raise CaptureError("the needle is not in the tokenised prompt (was it truncated?)")
    return ids, (inside[0], inside[-1] + 1)


def fit_to_length(tokenizer, build, length):
    """The largest filler count n whose prompt build(n) has at most `length` tokens."""
    low, high = 0, 1
    while len(tokenizer(build(high))["input_ids"]) <= length:
        low, high = high, high * 2
        if high > 1 << 22:
            break
    while high - low > 1:
        middle = (low + high) // 2
        if len(tokenizer(build(middle))["input_ids"]) <= length:
            low = middle
        else:
            high = middle
    return low


def passkey_prompt(tokenizer, length, depth, passkey=None, seed=0):
    """The Quest/Fier passkey retrieval prompt of about `length` tokens, the key at `depth` (0..1)."""
    passkey = passkey if passkey is not None else random.Random(seed).randint(10000, 99999)
    needle = f"The pass key is {passkey}. Remember it. {passkey} is the pass key. "

    def build(fillers):
        before = round(fillers * depth)
        return PASSKEY_INTRO + PASSKEY_FILLER * before + needle + PASSKEY_FILLER * (fillers - before) + PASSKEY_QUESTION

    fillers = fit_to_length(tokenizer, build, length)
    text = build(fillers)
    start = len(PASSKEY_INTRO + PASSKEY_FILLER * round(fillers * depth))
    ids, span = span_of(tokenizer, text, start, start + len(needle))
    return text, ids, span


def needle_prompt(tokenizer, haystack, needle, length, depth, question=""):
    """A needle sentence inserted at `depth` (0..1) of a haystack text cut to about `length` tokens."""
    needle = needle.strip() + " "

    def build(chars):
        cut = haystack[:chars]
        at = cut.rfind(". ", 0, int(len(cut) * depth)) + 2 if depth > 0 else 0
        at = max(at, 0) if at > 1 else int(len(cut) * depth)
        return cut[:at] + needle + cut[at:] + question, at

    low, high = 0, len(haystack)
    while high - low > 1:
        middle = (low + high) // 2
        if len(tokenizer(build(middle)[0])["input_ids"]) <= length:
            low = middle
        else:
            high = middle
    text, at = build(low)
    ids, span = span_of(tokenizer, text, at, at + len(needle))
    return text, ids, span


def token_texts_of(tokenizer, ids):
    return [tokenizer.decode([i]) for i in ids]


# ---- command line --------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description="Export a kvscope capture from a Hugging Face causal LM.")
    parser.add_argument("--model", required=True, help="Hugging Face id or local directory")
    parser.add_argument("--gguf-file", help="GGUF file name inside --model (needs the gguf package)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--layers", default="all", help="e.g. 0,5,all")
    parser.add_argument("--dtype", default="auto", choices=["auto", "float16", "bfloat16", "float32"])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    prompt = parser.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--prompt")
    prompt.add_argument("--prompt-file")
    prompt.add_argument("--passkey", action="store_true", help="passkey retrieval prompt")
    prompt.add_argument("--haystack-file", help="needle in a haystack over this text file (with --needle)")
    parser.add_argument("--needle", help="the sentence to hide in --haystack-file")
    parser.add_argument("--question", default="", help="text appended after the haystack")
    parser.add_argument("--length", type=int, default=4096, help="prompt length in tokens (passkey, haystack)")
    parser.add_argument("--depth", type=float, default=0.5, help="where the needle goes, 0..1")
    parser.add_argument("--seed", type=int, default=0, help="seed of the passkey")
    args = parser.parse_args(argv)

    try:
        if args.haystack_file and not args.needle:
            raise CaptureError("--haystack-file needs --needle")
        if not 0.0 <= args.depth <= 1.0:
            raise CaptureError("--depth must lie in [0, 1]")
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.model, gguf_file=args.gguf_file) if args.gguf_file \
            else AutoTokenizer.from_pretrained(args.model)
        span = None
        if args.passkey:
            _, ids, span = passkey_prompt(tokenizer, args.length, args.depth, seed=args.seed)
        elif args.haystack_file:
            with open(args.haystack_file, encoding="utf-8") as f:
                _, ids, span = needle_prompt(tokenizer, f.read(), args.needle, args.length, args.depth, args.question)
        else:
            text = args.prompt if args.prompt is not None else open(args.prompt_file, encoding="utf-8").read()
            ids = tokenizer(text)["input_ids"]
        model = load_model(args.model, args.gguf_file, args.dtype, args.device)
        layers = parse_layers(args.layers, model.config.num_hidden_layers)
        input_ids = torch.tensor(ids, dtype=torch.long)
        source = "python3 tools/export/capture_qkv.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
        tensors, metadata, errors = capture(model, input_ids, layers, token_texts_of(tokenizer, ids), args.model,
                                            source, span)
        write_capture(args.out, tensors, metadata)
        worst = max(errors.values())
        print(f"wrote {args.out}: {len(layers)} layer(s), {len(ids)} tokens, self-check max relative error "
              f"{worst:.2e}" + (f", needle tokens [{span[0]}, {span[1]})" if span else ""))
        return 0
    except CaptureError as e:
        print(f"capture_qkv: {e}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as e:
        print(f"capture_qkv: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
