"""Tests of tools/peers/llamacpp/write_gguf.py's --type: for every block type,
a tiny Llama's file parsed back (each tensor's type, blocks and bytes from
its shape), its blocks' scale fields holding the constants and every other
byte the hash (q and k rows un-permuted), the same seed giving the same
bytes, the values (dequantized here from ggml's block layouts, as
engine/formats/ggml_blocks.cpp does) finite and within the type's bound;
ggml's own dequantization agreeing where the llama.cpp peer's cache holds
libggml-base.so. No GPU: run by ctest as `gguf_writer_types` (exit 77, ctest's
skip, where python3 has no numpy), or

    python3 tools/peers/llamacpp/test_write_gguf.py
"""
import ctypes
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
except ImportError:
    print("SKIP: python3 has no numpy (python3-numpy)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
WRITER = os.path.join(HERE, "write_gguf.py")
sys.path.insert(0, HERE)
from gguf_file import read_gguf  # noqa: E402
import write_gguf  # noqa: E402

# Multiples of 256 in every row (hidden, q_dim, intermediate) so that the K types fit.
CONFIG = {"architectures": ["LlamaForCausalLM"], "hidden_size": 256, "intermediate_size": 512,
          "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 260,
          "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 10000.0}
SEED = 11
# The F16 draw's bound, and what the fixed scales allow each type (ggml_blocks.cpp's formulas at their extremes).
BOUNDS = {"f16": 1 / 32, "q8_0": 1 / 32, "q4_0": 1 / 32, "q4_1": 1 / 32, "q5_0": 1 / 32, "q5_1": 1 / 32,
          "q2_k": 45 / 1024, "q3_k": 1 / 32, "q4_k": 63 * 15 / 16384, "q5_k": 63 * 31 / 16384, "q6_k": 128 * 32 / 16384}
LLAMA_FTYPES = {"f16": 1, "q4_0": 2, "q4_1": 3, "q8_0": 7, "q5_0": 8, "q5_1": 9, "q2_k": 10, "q3_k": 11,
                "q4_k": 14, "q5_k": 16, "q6_k": 18}  # llama.h: MOSTLY_Q3_K_S, _Q4_K_S, _Q5_K_S


def parse_gguf(path):
    """(metadata, {name: (type, dims, bytes)}) of a GGUF file (gguf_file.py)."""
    with open(path, "rb") as f:
        return read_gguf(f.read())


def half(b, at):
    """The fp16 at byte `at` of every block (rows of b) as float32."""
    return np.ascontiguousarray(b[:, at:at + 2]).view("<f2").astype(np.float32)


def f32(x):
    return np.asarray(x).astype(np.float32)


def scale_min_k4(scales):
    """Q4_K's and Q5_K's 8 6-bit scales and minima of 12 packed bytes (blocks, 12) -> (blocks, 8) each."""
    q = scales.astype(np.uint8)
    sc = np.concatenate([q[:, 0:4] & 63, (q[:, 8:12] & 0xF) | ((q[:, 0:4] >> 6) << 4)], axis=1)
    mn = np.concatenate([q[:, 4:8] & 63, (q[:, 8:12] >> 4) | ((q[:, 4:8] >> 6) << 4)], axis=1)
    return f32(sc), f32(mn)


def dequantize(type_name, raw):
    """The values of a block-typed tensor's bytes, block after block, in ggml's order
    of float32 operations (engine/formats/ggml_blocks.cpp)."""
    if type_name == "f16":
        return np.frombuffer(raw, "<f2").astype(np.float32)
    t = write_gguf.BLOCK_TYPES[type_name]
    b = np.frombuffer(raw, np.uint8).reshape(-1, t.block_bytes)
    n = b.shape[0]
    if type_name == "q8_0":
        return (f32(b[:, 2:34].view(np.int8)) * half(b, 0)).ravel()
    if type_name in ("q4_0", "q4_1"):
        qs = b[:, 2:18] if type_name == "q4_0" else b[:, 4:20]
        q = f32(np.concatenate([qs & 0xF, qs >> 4], axis=1))
        if type_name == "q4_0":
            return ((q - 8) * half(b, 0)).ravel()
        return (q * half(b, 0) + half(b, 2)).ravel()
    if type_name in ("q5_0", "q5_1"):
        legacy0 = type_name == "q5_0"
        qh = np.ascontiguousarray(b[:, 2:6] if legacy0 else b[:, 4:8]).view("<u4")
        qs = b[:, 6:22] if legacy0 else b[:, 8:24]
        bit = (qh >> np.arange(32, dtype=np.uint32)) & 1  # value j's fifth bit
        q = f32(np.concatenate([qs & 0xF, qs >> 4], axis=1) | (bit << 4))
        if legacy0:
            return ((q - 16) * half(b, 0)).ravel()
        return (q * half(b, 0) + half(b, 2)).ravel()
    if type_name == "q2_k":
        scales, qs = b[:, 0:16].reshape(n, 2, 4, 2, 1), b[:, 16:80].reshape(n, 2, 1, 32)
        q = (qs >> (2 * np.arange(4, dtype=np.uint8)).reshape(1, 1, 4, 1)) & 3  # (n, half, shift, 32)
        d, dmin = half(b, 80).reshape(n, 1, 1, 1, 1), half(b, 82).reshape(n, 1, 1, 1, 1)
        return ((d * f32(scales & 0xF)) * f32(q.reshape(n, 2, 4, 2, 16)) - dmin * f32(scales >> 4)).ravel()
    if type_name == "q3_k":
        hm, qs = b[:, 0:32], b[:, 32:96].reshape(n, 2, 1, 32)
        aux = np.ascontiguousarray(b[:, 96:108]).view("<u4")
        low4, low2, tmp = np.uint32(0x0F0F0F0F), np.uint32(0x03030303), aux[:, 2]
        unpacked = np.stack([(aux[:, 0] & low4) | (((tmp >> 0) & low2) << 4),
                             (aux[:, 1] & low4) | (((tmp >> 2) & low2) << 4),
                             ((aux[:, 0] >> 4) & low4) | (((tmp >> 4) & low2) << 4),
                             ((aux[:, 1] >> 4) & low4) | (((tmp >> 6) & low2) << 4)], axis=1).astype("<u4")
        scales = f32(unpacked.view(np.int8).astype(np.int32) - 32).reshape(n, 2, 4, 2, 1)
        shifts = (2 * np.arange(4, dtype=np.uint8)).reshape(1, 1, 4, 1)
        low = (qs >> shifts) & 3  # (n, half, shift, 32)
        masks = (1 << np.arange(8, dtype=np.uint8)).reshape(1, 2, 4, 1)
        high = (hm.reshape(n, 1, 1, 32) & masks) != 0
        q = f32(low.astype(np.int8) - np.where(high, 0, 4).astype(np.int8))
        return ((half(b, 108).reshape(n, 1, 1, 1, 1) * scales) * q.reshape(n, 2, 4, 2, 16)).ravel()
    if type_name in ("q4_k", "q5_k"):
        d, dmin = half(b, 0).reshape(n, 1, 1, 1), half(b, 2).reshape(n, 1, 1, 1)
        sc, mn = scale_min_k4(b[:, 4:16])
        ql = b[:, 16:144] if type_name == "q4_k" else b[:, 48:176]
        ql = ql.reshape(n, 4, 1, 32)
        q = f32(np.concatenate([ql & 0xF, ql >> 4], axis=2))  # (n, chunk, low/high nibble, 32)
        if type_name == "q5_k":
            qh = b[:, 16:48].reshape(n, 1, 1, 32)
            chunk, nibble = np.arange(4, dtype=np.uint8), np.arange(2, dtype=np.uint8)
            bits = 2 * chunk.reshape(1, 4, 1, 1) + nibble.reshape(1, 1, 2, 1)  # u1 and u2 of ggml's loop
            q = q + f32(((qh >> bits) & 1) * 16)
        return ((d * sc.reshape(n, 4, 2, 1)) * q - dmin * mn.reshape(n, 4, 2, 1)).ravel()
    if type_name == "q6_k":
        ql, qh = b[:, 0:128].reshape(n, 2, 2, 32), b[:, 128:192].reshape(n, 2, 1, 32)
        sc = f32(b[:, 192:208].view(np.int8)).reshape(n, 2, 4, 2, 1)
        low = np.stack([ql[:, :, 0] & 0xF, ql[:, :, 1] & 0xF, ql[:, :, 0] >> 4, ql[:, :, 1] >> 4], axis=2)
        high = (qh >> (2 * np.arange(4, dtype=np.uint8)).reshape(1, 1, 4, 1)) & 3
        q = f32((low | (high << 4)).astype(np.int8) - 32).reshape(n, 2, 4, 2, 16)  # (n, half, quarter, l // 16, 16)
        return ((half(b, 208).reshape(n, 1, 1, 1, 1) * sc) * q).ravel()
    raise AssertionError(type_name)


def ggml_dequantizer():
    """ggml's own to_float of each type, from the llama.cpp peer's cache, or None."""
    cache = os.environ.get("KVSCOPE_LLAMACPP_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kvscope", "llamacpp")
    with open(os.path.join(HERE, "install.sh")) as f:
        version = next((line.split("=", 1)[1].strip() for line in f if line.startswith("version=")), None)
    path = os.path.join(cache, version or "", "lib", "libggml-base.so")
    if not os.path.exists(path):
        return None

    class Traits(ctypes.Structure):  # ggml.h's struct ggml_type_traits
        _fields_ = [("type_name", ctypes.c_char_p), ("blck_size", ctypes.c_int64),
                    ("blck_size_interleave", ctypes.c_int64), ("type_size", ctypes.c_size_t),
                    ("is_quantized", ctypes.c_bool), ("to_float", ctypes.c_void_p),
                    ("from_float_ref", ctypes.c_void_p)]

    lib = ctypes.CDLL(path)
    lib.ggml_get_type_traits.restype = ctypes.POINTER(Traits)
    lib.ggml_get_type_traits.argtypes = [ctypes.c_int]
    to_float_type = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)

    def run(ggml_type, raw, count):
        traits = lib.ggml_get_type_traits(ggml_type).contents
        source = ctypes.create_string_buffer(bytes(raw), len(raw))
        out = np.zeros(count, np.float32)
        to_float_type(traits.to_float)(ctypes.addressof(source), out.ctypes.data, count)
        return out

    return run


def write(config_path, out, type_name, seed=SEED, check=True):
    return subprocess.run([sys.executable, WRITER, config_path, out, "--seed", str(seed), "--jobs", "2", "--type",
                           type_name], capture_output=True, text=True, check=check)


class WriteGgufTypesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.TemporaryDirectory()
        cls.config = os.path.join(cls.work.name, "config.json")
        with open(cls.config, "w") as f:
            json.dump(CONFIG, f)
        cls.files = {}
        for name in write_gguf.TYPE_NAMES:
            cls.files[name] = os.path.join(cls.work.name, name + ".gguf")
            write(cls.config, cls.files[name], name.upper() if name in ("q4_k", "f16") else name)
        cls.parsed = {name: parse_gguf(path) for name, path in cls.files.items()}
        cls.matrices = {t.name: t for t in write_gguf.tensors(write_gguf.Shape(CONFIG)) if t.fill == "random"}

    @classmethod
    def tearDownClass(cls):
        cls.work.cleanup()

    def blocks(self, type_name):
        """(tensor name, its BlockType, its bytes as (blocks, block bytes)) of each matrix."""
        t = write_gguf.BLOCK_TYPES[type_name]
        _, tensors = self.parsed[type_name]
        for name in self.matrices:
            yield name, t, np.frombuffer(tensors[name][2], np.uint8)[:self.size(name, t)].reshape(-1, t.block_bytes)

    def size(self, name, t):
        rows, cols = self.matrices[name].shape
        return rows * cols // t.elements * t.block_bytes

    def test_tensors_are_whole_blocks_of_the_type(self):
        for type_name in write_gguf.BLOCK_TYPES:
            t = write_gguf.BLOCK_TYPES[type_name]
            metadata, tensors = self.parsed[type_name]
            self.assertEqual(metadata["general.file_type"], LLAMA_FTYPES[type_name], type_name)
            self.assertEqual(set(tensors), set(self.parsed["f16"][1]), type_name)
            for name, (kind, dims, raw) in tensors.items():
                if name in self.matrices:
                    rows, cols = self.matrices[name].shape
                    self.assertEqual((kind, dims), (t.ggml_type, (cols, rows)), (type_name, name))
                    self.assertEqual(cols % t.elements, 0)
                    # The tensor's bytes, then only the alignment's padding before the next one.
                    size = self.size(name, t)
                    self.assertEqual(len(raw), (size + 31) // 32 * 32, (type_name, name))
                    self.assertEqual(raw[size:], bytes(len(raw) - size), (type_name, name))
                else:
                    self.assertEqual(kind, write_gguf.TENSOR_F32, (type_name, name))
                    self.assertTrue((np.frombuffer(raw, "<f4")[:dims[0]] == 1).all(), (type_name, name))
        self.assertEqual(self.parsed["f16"][0]["general.file_type"], 1)

    def test_scale_fields_hold_the_constants(self):
        for type_name in write_gguf.BLOCK_TYPES:
            for name, t, b in self.blocks(type_name):
                for at, bits in t.scales:
                    self.assertTrue((b[:, at] == bits & 0xFF).all() and (b[:, at + 1] == bits >> 8).all(),
                                    (type_name, name, at))

    def test_other_bytes_are_the_hash_in_hugging_face_row_order(self):
        for type_name in write_gguf.BLOCK_TYPES:
            for name, t, b in self.blocks(type_name):
                m = self.matrices[name]
                rows, cols = m.shape
                row_bytes = cols // t.elements * t.block_bytes
                file_rows = b.reshape(rows, row_bytes)
                if m.heads:  # the file's row 2i + s of a head is Hugging Face's row s * d/2 + i
                    d = rows // m.heads
                    file_rows = file_rows.reshape(m.heads, d // 2, 2, row_bytes).transpose(0, 2, 1, 3)
                got = file_rows.reshape(-1, t.block_bytes).copy()
                words = np.arange((rows * row_bytes + 3) // 4, dtype=np.uint32)
                words ^= np.uint32(write_gguf.mix32(write_gguf.weight_key(SEED, m.index)))
                want = write_gguf.mix32(words).view(np.uint8)[:rows * row_bytes].reshape(-1, t.block_bytes).copy()
                for at, _ in t.scales:
                    got[:, at:at + 2] = want[:, at:at + 2] = 0
                self.assertTrue((got == want).all(), (type_name, name))

    def test_the_same_seed_gives_the_same_bytes(self):
        for type_name in write_gguf.TYPE_NAMES:
            again = os.path.join(self.work.name, "again.gguf")
            write(self.config, again, type_name)
            with open(again, "rb") as a, open(self.files[type_name], "rb") as b:
                self.assertTrue(a.read() == b.read(), type_name)
        other = os.path.join(self.work.name, "other.gguf")
        write(self.config, other, "q4_k", seed=SEED + 1)
        self.assertNotEqual(parse_gguf(other)[1]["blk.0.ffn_up.weight"][2],
                            self.parsed["q4_k"][1]["blk.0.ffn_up.weight"][2])

    def test_values_are_finite_and_bounded(self):
        for type_name in write_gguf.TYPE_NAMES:
            _, tensors = self.parsed[type_name]
            for name, m in self.matrices.items():
                t = write_gguf.BLOCK_TYPES.get(type_name)
                size = self.size(name, t) if t else m.count * 2
                values = dequantize(type_name, tensors[name][2][:size])
                self.assertEqual(values.size, m.count, (type_name, name))
                self.assertTrue(np.isfinite(values).all(), (type_name, name))
                self.assertLessEqual(float(np.abs(values).max()), BOUNDS[type_name], (type_name, name))
                self.assertGreater(float(values.std()), BOUNDS[type_name] / 16, (type_name, name))

    def test_ggml_dequantizes_the_same_values(self):
        ggml = ggml_dequantizer()
        if ggml is None:
            self.skipTest("llama.cpp's libraries are not in the cache (tools/peers/llamacpp/install.sh)")
        for type_name in write_gguf.TYPE_NAMES:
            t = write_gguf.BLOCK_TYPES.get(type_name)
            raw = self.parsed[type_name][1]["blk.0.attn_q.weight"][2]
            m = self.matrices["blk.0.attn_q.weight"]
            raw = raw[:self.size(m.name, t) if t else m.count * 2]
            ours, theirs = dequantize(type_name, raw), ggml(t.ggml_type if t else 1, raw, m.count)
            self.assertTrue(np.array_equal(ours, theirs), (type_name, float(np.abs(ours - theirs).max())))

    def test_rows_of_partial_blocks_are_refused(self):
        config = os.path.join(self.work.name, "narrow.json")
        with open(config, "w") as f:
            json.dump(dict(CONFIG, hidden_size=64, intermediate_size=128), f)
        out = os.path.join(self.work.name, "narrow.gguf")
        result = write(config, out, "q4_k", check=False)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
        self.assertIn("token_embd.weight", result.stderr)
        self.assertIn("Q4_K", result.stderr)
        self.assertFalse(os.path.exists(out))
        self.assertEqual(write(config, out, "q8_0", check=False).returncode, 0)  # 64 is two Q8_0 blocks


if __name__ == "__main__":
    unittest.main()
