#!/usr/bin/env python3
"""A GGUF file of random F16 (or ggml block-typed) weights for a Hugging Face
config.json (the shapes in assets/shapes/), that llama.cpp and kvscope both read:

  python3 tools/peers/llamacpp/write_gguf.py assets/shapes/llama-3.1-8b.json /tmp/llama-3.1-8b.gguf
  python3 tools/peers/llamacpp/write_gguf.py assets/shapes/llama-3.1-8b.json /tmp/llama-3.1-8b-q4_k.gguf --type q4_k

The weights are kvscope's own `--random-weights` draw (engine/model/
random_weights.cpp, shaders/model_random_fill.comp): element i of matrix k
(the embedding 0, the LM head 1, then q, k, v, o, gate, up, down of layer l
at 2 + 7l + 0..6) is the top byte of a hash of (key, i), minus 128, over
4096 (uniform in [-1/32, 1/32), exact in F16), key = mix32(seed) ^ (k *
0x9e3779b9); every norm is ones, Qwen2's biases zeros. So `kvscope ...
--model FILE.gguf` runs the model that `kvscope ... --model CONFIG
--random-weights --seed S` runs (tests/gguf_writer_test.sh holds the two
forward passes together).

`--type T` (q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k,
any case; f16 the default) writes every matrix as ggml's blocks of T, the
draw of `kvscope ... --random-weights --weight-type T` (norms stay F32):
word w (4 bytes, little-endian) of a matrix's bytes, its blocks in row
order, is mix32(w ^ mix32(key)), the F16 draw's key; then each block's fp16
scale fields (d, and m or dmin where the type has one) are overwritten with
constants (write_gguf.py's BLOCK_TYPES: Q8_0's d 2^-12, Q4_K's d and dmin
2^-14, ...), the quants and sub-scales staying hashed. The words count in
Hugging Face's row order: a permuted q or k row holds the bytes of the row
it came from. Each matrix's rows must be whole blocks (32 values for the
legacy types, 256 for the K types), else exit 2 naming the tensor. llama.cpp
reads these files as it reads its quantizer's; `general.file_type` is the
quantizer's for T.

llama-family models (LlamaForCausalLM, MistralForCausalLM) are written as
llama.cpp's converter writes them: architecture `llama`, the q and k rows
of each head permuted from Hugging Face's half-split RoPE pairs to adjacent
ones (the layout llama.cpp and kvscope's GGUF reader rotate), Llama 3's RoPE
scaling as the `rope_freqs.weight` factors. Qwen2 and Qwen3 are written as
`qwen2` / `qwen3` (biases, q/k norms, no permutation), which llama.cpp reads
and kvscope's GGUF reader does not.

The tokenizer is a byte-level BPE (`gpt2`, pre-tokenizer `gpt-2`) of the
config's vocab_size: the 256 byte tokens, the config's BOS and EOS as
control tokens, the rest placeholder tokens that no text produces, and no
merges: text is one token a byte, which is enough to time a model.
`--tokenizer-json PATH` also writes the same tokenizer as a Hugging Face
tokenizer.json (for a `--random-weights` run of the config beside it).

The file is written tensor by tensor in blocks, `--jobs` processes at once
(default: every core), never holding the model in memory: Llama-3.2-1B's
2.5 GB took 22 s on 2 cores (an 8B shape is 16 GB); Llama-3.1-8B's 4.5 GB
at Q4_K took 16 s.
"""
import argparse
import concurrent.futures
import json
import math
import os
import struct
import sys

import numpy as np

ALIGNMENT = 32
BLOCK = 1 << 20  # elements hashed at once: 4 MB of uint32, within a core's cache
TASK = 1 << 24  # elements a job writes per task

# GGUF's value and tensor types (gguf.h).
U32, I32, F32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9
TENSOR_F32, TENSOR_F16 = 0, 1
LLAMA_FTYPE_MOSTLY_F16 = 1


class BlockType:
    """A ggml block type as --type writes it: ggml's type number, a block's values
    and bytes, llama.cpp's llama_ftype for a file of it, and its fp16 scale fields
    (byte offset in the block, constant's bits)."""

    def __init__(self, name, ggml_type, elements, block_bytes, ftype, scales):
        self.name, self.ggml_type, self.elements, self.block_bytes = name, ggml_type, elements, block_bytes
        self.ftype, self.scales = ftype, scales


# ggml's block layouts (engine/formats/ggml_blocks.h) and llama.h's llama_ftype.
# llama.cpp has no ftype for "every matrix Q3_K/Q4_K/Q5_K": the _S variants are
# the nearest (mostly that type). Fixed scales keep every value bounded (within
# [-1/32, 1/32] for the legacy types and Q3_K, [-1/4, 1/4] at worst, Q6_K).
BLOCK_TYPES = {t.name: t for t in (
    BlockType("q8_0", 8, 32, 34, 7, [(0, 0x0C00)]),
    BlockType("q4_0", 2, 32, 18, 2, [(0, 0x1C00)]),
    BlockType("q4_1", 3, 32, 20, 3, [(0, 0x1C00), (2, 0xA800)]),
    BlockType("q5_0", 6, 32, 22, 8, [(0, 0x1800)]),
    BlockType("q5_1", 7, 32, 24, 9, [(0, 0x1800), (2, 0xA800)]),
    BlockType("q2_k", 10, 256, 84, 10, [(80, 0x1400), (82, 0x1400)]),  # LLAMA_FTYPE_MOSTLY_Q2_K
    BlockType("q3_k", 11, 256, 110, 11, [(108, 0x0C00)]),  # LLAMA_FTYPE_MOSTLY_Q3_K_S
    BlockType("q4_k", 12, 256, 144, 14, [(0, 0x0400), (2, 0x0400)]),  # LLAMA_FTYPE_MOSTLY_Q4_K_S
    BlockType("q5_k", 13, 256, 176, 16, [(0, 0x0400), (2, 0x0400)]),  # LLAMA_FTYPE_MOSTLY_Q5_K_S
    BlockType("q6_k", 14, 256, 210, 18, [(208, 0x0400)]),  # LLAMA_FTYPE_MOSTLY_Q6_K
)}
TYPE_NAMES = ["f16", *BLOCK_TYPES]
# llama.cpp's token types (llama.h): normal, control.
NORMAL, CONTROL = 1, 3

ARCHITECTURES = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2",
                 "Qwen3ForCausalLM": "qwen3"}
GOLDEN = 0x9E3779B9
MASK = 0xFFFFFFFF


def mix32(x):
    """engine/model/random_weights.cpp's hash, on a Python int or a uint32 array (in place)."""
    if isinstance(x, int):
        x ^= x >> 16
        x = (x * 0x7FEB352D) & MASK
        x ^= x >> 15
        x = (x * 0x846CA68B) & MASK
        return x ^ (x >> 16)
    x ^= x >> np.uint32(16)
    x *= np.uint32(0x7FEB352D)
    x ^= x >> np.uint32(15)
    x *= np.uint32(0x846CA68B)
    x ^= x >> np.uint32(16)
    return x


def weight_key(seed, index):
    return mix32(seed & MASK) ^ ((index * GOLDEN) & MASK)


# The 256 values a weight takes, as F16: (byte - 128) / 4096.
VALUES = ((np.arange(256, dtype=np.float64) - 128) / 4096).astype(np.float16)


def random_values(key, indices):
    """The weights at these element indices (uint32) of the matrix drawn from key, as F16."""
    x = indices ^ np.uint32(mix32(key))
    mix32(x)
    x >>= np.uint32(24)
    return VALUES[x]


class Shape:
    def __init__(self, config):
        c = config
        (arch_name,) = c["architectures"]
        if arch_name not in ARCHITECTURES:
            raise SystemExit(f"write_gguf: architecture {arch_name} is not written ({', '.join(ARCHITECTURES)})")
        self.arch = ARCHITECTURES[arch_name]
        self.hidden, self.layers, self.heads = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"]
        self.kv_heads = c.get("num_key_value_heads") or self.heads
        self.head_dim = c.get("head_dim") or self.hidden // self.heads
        self.intermediate, self.vocab = c["intermediate_size"], c["vocab_size"]
        self.positions = c["max_position_embeddings"]
        self.rms_eps = c["rms_norm_eps"]
        self.theta = c.get("rope_theta", 10000.0)
        self.tied = bool(c.get("tie_word_embeddings", False))
        self.rope = c.get("rope_parameters") or c.get("rope_scaling") or {}
        self.rope_type = self.rope.get("rope_type", self.rope.get("type", "default"))
        if self.rope_type not in ("default", "linear", "llama3", "yarn"):
            raise SystemExit(f"write_gguf: rope_type {self.rope_type} is not written (default, linear, llama3, yarn)")

        def one_id(key):
            value = c.get(key)
            return value[0] if isinstance(value, list) and value else value if isinstance(value, int) else None

        self.bos, self.eos = one_id("bos_token_id"), one_id("eos_token_id")

    def rope_factors(self):
        """Llama 3's RoPE scaling as llama.cpp's converter writes it: each pair's
        frequency divided by these factors gives Hugging Face's llama3 frequencies."""
        r = self.rope
        factor, low, high = r["factor"], r["low_freq_factor"], r["high_freq_factor"]
        original = r["original_max_position_embeddings"]
        factors = []
        for i in range(self.head_dim // 2):
            frequency = 1.0 / self.theta ** (2 * i / self.head_dim)
            wavelength = 2 * math.pi / frequency
            if wavelength < original / high:
                factors.append(1.0)
            elif wavelength > original / low:
                factors.append(factor)
            else:
                smooth = (original / wavelength - low) / (high - low)
                factors.append(1.0 / ((1 - smooth) / factor + smooth))
        return np.array(factors, dtype=np.float32)


def tokenizer(shape):
    """Token texts and types: 256 byte tokens (GPT-2's byte-to-character map),
    BOS and EOS as control tokens, placeholders for the rest."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    specials = {i: name for i, name in ((shape.bos, "<s>"), (shape.eos, "</s>")) if i is not None}
    if any(i >= shape.vocab for i in specials):
        raise SystemExit(f"write_gguf: bos/eos ids {sorted(specials)} are past vocab_size {shape.vocab}")
    if shape.vocab < 256 + len(specials):
        raise SystemExit(f"write_gguf: vocab_size {shape.vocab} holds no room for 256 byte tokens and {len(specials)} special ones")
    texts, types, byte = [], [], 0
    for i in range(shape.vocab):
        if i in specials:
            texts.append(specials[i]), types.append(CONTROL)
        elif byte < 256:
            texts.append(chars[byte]), types.append(NORMAL)
            byte += 1
        else:
            texts.append(f"<unused{i}>"), types.append(NORMAL)
    if shape.bos == shape.eos and shape.bos is not None:
        texts[shape.bos] = "<|endoftext|>"
    return texts, types


def tokenizer_json(texts, types):
    """The same vocabulary as a Hugging Face tokenizer.json (byte-level BPE, no merges)."""
    vocab = {t: i for i, (t, k) in enumerate(zip(texts, types)) if k == NORMAL}
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, (t, k) in enumerate(zip(texts, types)) if k == CONTROL]
    return {"version": "1.0", "added_tokens": added, "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            "post_processor": None, "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                                                "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": vocab, "merges": []}}


class Tensor:
    """A tensor of the file: its GGUF name and dims (Hugging Face's shape reversed),
    and what fills it: a random matrix (its key index; `heads` for q/k rows permuted
    per head), ones, zeros or given F32 values. A random matrix is F16 until
    set_block gives it a BlockType."""

    def __init__(self, name, shape, fill, index=None, heads=None, values=None):
        self.name, self.shape, self.fill, self.index, self.heads, self.values = name, shape, fill, index, heads, values
        self.type = TENSOR_F16 if fill == "random" else TENSOR_F32
        self.count = math.prod(shape)
        self.bytes = self.count * (2 if self.type == TENSOR_F16 else 4)
        self.offset = 0

    def set_block(self, block):
        rows, cols = self.shape
        if cols % block.elements:
            print(f"write_gguf: {self.name} has rows of {cols} values, which {block.name.upper()} takes only in "
                  f"whole blocks of {block.elements}", file=sys.stderr)
            sys.exit(2)
        self.type = block.ggml_type
        self.bytes = rows * (cols // block.elements) * block.block_bytes


def tensors(shape):
    s = shape
    q_dim, kv_dim = s.heads * s.head_dim, s.kv_heads * s.head_dim
    permute = s.arch == "llama"
    out = [Tensor("token_embd.weight", (s.vocab, s.hidden), "random", 0)]
    if s.rope_type == "llama3":
        out.append(Tensor("rope_freqs.weight", (s.head_dim // 2,), "values", values=s.rope_factors()))
    out.append(Tensor("output_norm.weight", (s.hidden,), "ones"))
    if not s.tied:
        out.append(Tensor("output.weight", (s.vocab, s.hidden), "random", 1))
    for l in range(s.layers):
        b, first = f"blk.{l}.", 2 + 7 * l
        out += [Tensor(b + "attn_norm.weight", (s.hidden,), "ones"),
                Tensor(b + "attn_q.weight", (q_dim, s.hidden), "random", first, s.heads if permute else None),
                Tensor(b + "attn_k.weight", (kv_dim, s.hidden), "random", first + 1, s.kv_heads if permute else None),
                Tensor(b + "attn_v.weight", (kv_dim, s.hidden), "random", first + 2),
                Tensor(b + "attn_output.weight", (s.hidden, q_dim), "random", first + 3)]
        if s.arch == "qwen2":
            out += [Tensor(b + "attn_q.bias", (q_dim,), "zeros"), Tensor(b + "attn_k.bias", (kv_dim,), "zeros"),
                    Tensor(b + "attn_v.bias", (kv_dim,), "zeros")]
        if s.arch == "qwen3":
            out += [Tensor(b + "attn_q_norm.weight", (s.head_dim,), "ones"),
                    Tensor(b + "attn_k_norm.weight", (s.head_dim,), "ones")]
        out += [Tensor(b + "ffn_norm.weight", (s.hidden,), "ones"),
                Tensor(b + "ffn_gate.weight", (s.intermediate, s.hidden), "random", first + 4),
                Tensor(b + "ffn_up.weight", (s.intermediate, s.hidden), "random", first + 5),
                Tensor(b + "ffn_down.weight", (s.hidden, s.intermediate), "random", first + 6)]
    return out


class Header:
    def __init__(self):
        self.parts = []

    def raw(self, fmt, *values):
        self.parts.append(struct.pack("<" + fmt, *values))

    def text(self, s):
        b = s.encode("utf-8")
        self.raw("Q", len(b))
        self.parts.append(b)

    def value(self, kind, v):
        if kind == STRING:
            self.text(v)
        else:
            self.raw({U32: "I", I32: "i", F32: "f", BOOL: "?"}[kind], v)

    def key(self, name, kind, v):
        self.text(name)
        self.raw("I", kind)
        self.value(kind, v)

    def array(self, name, kind, values):
        self.text(name)
        self.raw("II", ARRAY, kind)
        self.raw("Q", len(values))
        if kind == I32:
            self.parts.append(np.asarray(values, dtype="<i4").tobytes())
        else:
            for v in values:
                self.value(kind, v)

    def bytes(self):
        return b"".join(self.parts)


def metadata(shape, name, texts, types, file_type=LLAMA_FTYPE_MOSTLY_F16):
    s, a = shape, shape.arch
    entries = [("general.architecture", STRING, a), ("general.name", STRING, name),
               ("general.file_type", U32, file_type),
               ("general.alignment", U32, ALIGNMENT),
               (f"{a}.context_length", U32, s.positions), (f"{a}.embedding_length", U32, s.hidden),
               (f"{a}.block_count", U32, s.layers), (f"{a}.feed_forward_length", U32, s.intermediate),
               (f"{a}.attention.head_count", U32, s.heads), (f"{a}.attention.head_count_kv", U32, s.kv_heads),
               (f"{a}.attention.key_length", U32, s.head_dim), (f"{a}.attention.value_length", U32, s.head_dim),
               (f"{a}.rope.dimension_count", U32, s.head_dim), (f"{a}.rope.freq_base", F32, s.theta),
               (f"{a}.attention.layer_norm_rms_epsilon", F32, s.rms_eps), (f"{a}.vocab_size", U32, s.vocab)]
    if s.rope_type in ("linear", "yarn"):
        entries += [(f"{a}.rope.scaling.type", STRING, s.rope_type), (f"{a}.rope.scaling.factor", F32, s.rope["factor"])]
        if "original_max_position_embeddings" in s.rope:
            entries.append((f"{a}.rope.scaling.original_context_length", U32, s.rope["original_max_position_embeddings"]))
    entries += [("tokenizer.ggml.model", STRING, "gpt2"), ("tokenizer.ggml.pre", STRING, "gpt-2")]
    if s.bos is not None:
        entries += [("tokenizer.ggml.bos_token_id", U32, s.bos), ("tokenizer.ggml.add_bos_token", BOOL, True)]
    else:
        entries.append(("tokenizer.ggml.add_bos_token", BOOL, False))
    if s.eos is not None:
        entries.append(("tokenizer.ggml.eos_token_id", U32, s.eos))
    return entries, [("tokenizer.ggml.tokens", STRING, texts), ("tokenizer.ggml.token_type", I32, types),
                     ("tokenizer.ggml.merges", STRING, [])]


def write_task(path, offset, tensor_fields, seed, first, count):
    """Hashes elements [first, first + count) of a random matrix (in the file's
    row order) and writes them at their place in the file."""
    index, rows, cols, heads = tensor_fields
    key = weight_key(seed, index)
    if heads:  # the file's row (h, i, s) is Hugging Face's row (h, s, i): pairs made adjacent
        d = rows // heads
        r = np.arange(rows, dtype=np.uint64)
        h, i, s = r // d, (r % d) // 2, r % 2
        hf_row = h * d + s * (d // 2) + i
    fd = os.open(path, os.O_WRONLY)
    try:
        done = 0
        while done < count:
            n = min(BLOCK, count - done)
            start = first + done
            if heads:
                element = np.arange(start, start + n, dtype=np.uint64)
                indices = (hf_row[element // cols] * cols + element % cols).astype(np.uint32)
            else:
                indices = np.arange(start, start + n, dtype=np.uint64).astype(np.uint32)
            os.pwrite(fd, random_values(key, indices).tobytes(), offset + 2 * start)
            done += n
    finally:
        os.close(fd)


def block_bytes(block, mixed_key, start, end):
    """Bytes [start, end) of a matrix of `block`s drawn from mix32(key), in Hugging
    Face's row order; start is a block's first byte."""
    first, last = start // 4, (end + 3) // 4
    words = np.arange(first, last, dtype=np.uint64).astype(np.uint32)
    words ^= np.uint32(mixed_key)
    mix32(words)
    data = words.astype("<u4", copy=False).view(np.uint8)[start - 4 * first:end - 4 * first]
    fields = data[:(end - start) // block.block_bytes * block.block_bytes].reshape(-1, block.block_bytes)
    for at, bits in block.scales:
        fields[:, at] = bits & 0xFF
        fields[:, at + 1] = bits >> 8
    return data


def write_block_task(path, offset, tensor_fields, seed, type_name, first_row, row_count):
    """Writes rows [first_row, first_row + row_count) of a block-typed random matrix
    (whole heads where its rows are permuted) at their place in the file."""
    index, rows, cols, heads = tensor_fields
    block = BLOCK_TYPES[type_name]
    row_bytes = cols // block.elements * block.block_bytes
    unit = rows // heads if heads else 1
    piece = max(unit, 4 * BLOCK // row_bytes // unit * unit)
    mixed_key = mix32(weight_key(seed, index))
    fd = os.open(path, os.O_WRONLY)
    try:
        for row in range(first_row, first_row + row_count, piece):
            n = min(piece, first_row + row_count - row)
            data = block_bytes(block, mixed_key, row * row_bytes, (row + n) * row_bytes)
            if heads:  # a head's file rows (i, s) are its Hugging Face rows (s, i): as write_task
                data = data.reshape(n // unit, 2, unit // 2, row_bytes).transpose(0, 2, 1, 3)
            os.pwrite(fd, np.ascontiguousarray(data).tobytes(), offset + row * row_bytes)
    finally:
        os.close(fd)


def main():
    paragraphs = __doc__.split("\n\n")
    parser = argparse.ArgumentParser(description=paragraphs[0].rstrip(":") + ".", epilog=next(
        p for p in paragraphs if p.startswith("`--type")), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", help="a Hugging Face config.json (assets/shapes/*.json)")
    parser.add_argument("out", help="the GGUF file to write")
    parser.add_argument("--seed", type=int, default=0, help="kvscope's --seed (default 0)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count(), help="processes hashing at once")
    parser.add_argument("--tokenizer-json", help="also write the tokenizer as a Hugging Face tokenizer.json here")
    parser.add_argument("--type", type=str.lower, choices=TYPE_NAMES, default="f16", metavar="TYPE",
                        help="the matrices' ggml type, kvscope's --weight-type: " + ", ".join(TYPE_NAMES) +
                             " (default f16): the draw below")
    args = parser.parse_args()

    config = json.load(open(args.config))
    shape = Shape(config)
    name = os.path.splitext(os.path.basename(args.config))[0]
    texts, types = tokenizer(shape)
    if args.tokenizer_json:
        with open(args.tokenizer_json, "w") as f:
            json.dump(tokenizer_json(texts, types), f, ensure_ascii=False)
    table = tensors(shape)
    block = BLOCK_TYPES.get(args.type)
    if block:
        for t in table:
            if t.fill == "random":
                t.set_block(block)
    offset = 0
    for t in table:
        t.offset = offset
        offset = (offset + t.bytes + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
    data_bytes = offset

    scalars, arrays = metadata(shape, name, texts, types, block.ftype if block else LLAMA_FTYPE_MOSTLY_F16)
    h = Header()
    h.raw("4sIQQ", b"GGUF", 3, len(table), len(scalars) + len(arrays))
    for key, kind, value in scalars:
        h.key(key, kind, value)
    for key, kind, values in arrays:
        h.array(key, kind, values)
    for t in table:
        h.text(t.name)
        h.raw("I", len(t.shape))
        h.raw(f"{len(t.shape)}Q", *reversed(t.shape))  # GGUF lists the fastest dimension first
        h.raw("IQ", t.type, t.offset)
    header = h.bytes()
    data_start = (len(header) + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT

    partial = args.out + ".partial"
    with open(partial, "wb") as f:
        f.write(header + b"\0" * (data_start - len(header)))
        f.truncate(data_start + data_bytes)
        for t in table:  # the small F32 tensors here, the matrices by the jobs below
            if t.fill != "random":
                values = {"ones": lambda: np.ones(t.count, np.float32), "zeros": lambda: np.zeros(t.count, np.float32),
                          "values": lambda: t.values}[t.fill]()
                f.seek(data_start + t.offset)
                f.write(np.asarray(values, dtype="<f4").tobytes())
    tasks = []
    for t in table:
        if t.fill != "random":
            continue
        rows, cols = t.shape
        fields = (t.index, rows, cols, t.heads)
        if block:  # whole heads where rows are permuted: a row moves only within its head
            unit = rows // t.heads if t.heads else 1
            step = max(unit, TASK // cols // unit * unit)
            for first in range(0, rows, step):
                tasks.append((write_block_task, partial, data_start + t.offset, fields, args.seed, args.type, first,
                              min(step, rows - first)))
        else:
            for first in range(0, t.count, TASK):
                tasks.append((write_task, partial, data_start + t.offset, fields, args.seed, first,
                              min(TASK, t.count - first)))
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for future in [pool.submit(*task) for task in tasks]:
            future.result()
    os.replace(partial, args.out)
    print(f"write_gguf: {args.out}: {shape.arch}, {shape.layers} layers, {len(table)} tensors, "
          f"{args.type.upper()}, {(data_start + data_bytes) / 1e9:.2f} GB", file=sys.stderr)


if __name__ == "__main__":
    main()
